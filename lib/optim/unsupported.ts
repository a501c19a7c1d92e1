/** PyTorch optimizer options that flockml does not take, each refused with the reason (never ignored). */
import { argError } from '../errors';

const REASONS: Record<string, string> = {
  foreach: 'every step is already one fused multi-tensor call per device',
  fused: 'every step is already one fused multi-tensor call per device',
  differentiable: 'optimizer steps are not recorded by autograd',
  capturable: 'there is no CUDA graph capture',
};

/** Throws ERR_ARG for an option of `names` present in `options` (snake_case spellings too). */
export function rejectUnsupported(op: string, options: unknown, names: readonly string[]): void {
  if (options === null || typeof options !== 'object') return;
  for (const key of Object.keys(options)) {
    const camel = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    if (names.includes(camel)) throw argError(op, `option '${key}' is not supported (${REASONS[camel]})`);
  }
}
