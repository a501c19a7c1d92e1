/** The safetensors files (cpp/bindings/io.cc). */
import { group, hand } from './dsl';

export const ioExports = group('io', 'safetensors files', [
  hand(
    'ioSave',
    'Save',
    '(path: string, names: string[], tensors: NativeTensor[], metadata: Record<string, string>): Promise<void>',
    "Writes a safetensors file atomically after the tensors' producers have run; resolves once it is durable.",
  ),
  hand('ioSaveSync', 'SaveSync', '(path: string, names: string[], tensors: NativeTensor[], metadata: Record<string, string>): void'),
  hand(
    'ioRead',
    'Read',
    '(path: string, device: string, names: string[] | null): Promise<NativeReadResult>',
    'Reads the header and the named tensors (all for null, none for []) onto `device`, on a worker thread.',
  ),
  hand('ioReadSync', 'ReadSync', '(path: string, device: string, names: string[] | null): NativeReadResult'),
]);
