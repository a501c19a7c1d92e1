/**
 * save / load in the safetensors format, the format PyTorch (through the `safetensors` package)
 * and Hugging Face use for weights: a state dict written here loads into the equivalent PyTorch
 * model, and the reverse, with no renaming. Tensor bytes move between the file and device memory
 * in native code (cpp/io/); the async forms never hold the event loop while the disk works.
 */
import { basename, dirname } from 'node:path';
import { native } from '../native';
import type { NativeReadResult, NativeTensor } from '../../types/native';
import { Tensor } from '../tensor';
import { type CanonicalDType, type DType, isDType, isFloating } from '../dtype';
import { normalizeDevice } from '../device';
import { argError, checkOptions, describe, dtypeError } from '../errors';
import { removeDeadTemps, removeDeadTempsSync } from './atomic';

/** What save() takes: names to tensors (a Module's stateDict(), or any record or Map). */
export type StateDict = Record<string, Tensor> | Map<string, Tensor>;

export interface SaveOptions {
  /** Strings stored in the header's `__metadata__` (e.g. `{ format: 'pt' }`, which Hugging Face tools expect). */
  metadata?: Record<string, string>;
}

export interface LoadOptions {
  /** Where the tensors are placed: 'cpu' (default) or 'cuda:N'. The bytes go there directly. */
  device?: string;
  /** Casts floating-point tensors to this dtype after reading (integer and bool tensors keep theirs). */
  dtype?: DType;
}

/** One tensor's header entry: `dataOffsets` are byte offsets within the data section. */
export interface TensorEntry {
  name: string;
  dtype: CanonicalDType;
  shape: number[];
  dataOffsets: [number, number];
}

/** A safetensors header, as {@link inspect} reads it without touching the data. */
export interface SafetensorsHeader {
  /** Size of the JSON header (with its padding) in bytes; the data starts 8 bytes later. */
  headerBytes: number;
  dataBytes: number;
  metadata: Record<string, string>;
  tensors: TensorEntry[];
}

function entriesOf(op: string, state: StateDict): [string[], NativeTensor[]] {
  if (state === null || typeof state !== 'object') throw argError(op, `state must be a record or Map of tensors, got ${describe(state)}`);
  const pairs = state instanceof Map ? [...state.entries()] : Object.entries(state);
  const names: string[] = [];
  const handles: NativeTensor[] = [];
  for (const [k, t] of pairs) {
    if (typeof k !== 'string') throw argError(op, `state keys must be strings, got ${describe(k)}`);
    if (!(t instanceof Tensor)) throw argError(op, `'${k}' must be a Tensor, got ${describe(t)}`);
    names.push(k);
    handles.push(t.handle);
  }
  return [names, handles];
}

function saveArgs(
  op: string,
  state: StateDict,
  path: string,
  options: SaveOptions | undefined,
): [string, string[], NativeTensor[], Record<string, string>] {
  const { metadata = {} } = checkOptions(op, options, ['metadata']);
  if (typeof path !== 'string' || path === '') throw argError(op, `path must be a non-empty string, got ${describe(path)}`);
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw argError(op, `metadata must be an object of strings, got ${describe(metadata)}`);
  for (const [k, v] of Object.entries(metadata))
    if (typeof v !== 'string') throw argError(op, `metadata['${k}'] must be a string, got ${describe(v)}`);
  const [names, handles] = entriesOf(op, state);
  return [path, names, handles, metadata];
}

/**
 * Writes `state` to `path` as safetensors, atomically (a temporary file in the same directory,
 * fsync, rename, fsync of the directory): a crash leaves the old file or the new one, and the
 * next save to `path` removes the temporary file a killed save left. Resolves once the file is
 * durable. The bytes written are the tensors' values after all work queued on them so far; work
 * queued later (an optimizer step) waits for the write, so the file is a consistent snapshot.
 */
export function save(state: StateDict, path: string, options?: SaveOptions): Promise<void> {
  let writing: Promise<void>;
  try {
    // Queued before anything is awaited: that is what makes the file a snapshot of now.
    writing = native.ioSave(...saveArgs('save', state, path, options));
  } catch (e) {
    return Promise.reject(e);
  }
  return Promise.all([writing, removeDeadTemps(dirname(path), basename(path))]).then(() => undefined);
}

/** Blocking twin of {@link save}, for scripts and tests. */
export function saveSync(state: StateDict, path: string, options?: SaveOptions): void {
  const args = saveArgs('saveSync', state, path, options);
  removeDeadTempsSync(dirname(path), basename(path));
  native.ioSaveSync(...args);
}

function loadArgs(op: string, path: string, options: LoadOptions | undefined): [string, string, DType | undefined] {
  const { device, dtype } = checkOptions(op, options, ['device', 'dtype']);
  if (typeof path !== 'string' || path === '') throw argError(op, `path must be a non-empty string, got ${describe(path)}`);
  if (dtype !== undefined && !isDType(dtype)) throw dtypeError(op, `unknown dtype ${describe(dtype)}`);
  return [path, normalizeDevice(device, op), dtype];
}

/** The read tensors by name, cast to `dtype` where floating. */
function wrapTensors(result: NativeReadResult, dtype?: DType): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  result.names.forEach((name, i) => {
    const t = new Tensor(result.handles[i]);
    if (dtype === undefined || !isFloating(t.dtype) || t.dtype === dtype) {
      out[name] = t;
    } else {
      out[name] = t.to(dtype);
      t.dispose();
    }
  });
  return out;
}

/** Reads every tensor of a safetensors file onto `options.device`, by name. */
export async function load(path: string, options?: LoadOptions): Promise<Record<string, Tensor>> {
  const [p, device, dtype] = loadArgs('load', path, options);
  return wrapTensors(await native.ioRead(p, device, null), dtype);
}

/** Blocking twin of {@link load}. */
export function loadSync(path: string, options?: LoadOptions): Record<string, Tensor> {
  const [p, device, dtype] = loadArgs('loadSync', path, options);
  return wrapTensors(native.ioReadSync(p, device, null), dtype);
}

function headerOf(r: NativeReadResult): SafetensorsHeader {
  return {
    headerBytes: r.headerBytes,
    dataBytes: r.dataBytes,
    metadata: r.metadata,
    tensors: r.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, dataOffsets: [t.begin, t.end] })),
  };
}

/** Reads and validates the header of a safetensors file (names, dtypes, shapes, offsets, metadata) without reading its data. */
export async function inspect(path: string): Promise<SafetensorsHeader> {
  const [p] = loadArgs('inspect', path, undefined);
  return headerOf(await native.ioRead(p, 'cpu', []));
}

/** Blocking twin of {@link inspect}. */
export function inspectSync(path: string): SafetensorsHeader {
  const [p] = loadArgs('inspectSync', path, undefined);
  return headerOf(native.ioReadSync(p, 'cpu', []));
}

/** @internal Reads only the named tensors of a file (the sharded loader's building block). */
export async function loadNamed(path: string, names: string[], device: string): Promise<Record<string, Tensor>> {
  return wrapTensors(await native.ioRead(path, device, names));
}
