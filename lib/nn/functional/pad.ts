/**
 * F.pad as PyTorch's: pads (or, with negative amounts, crops) the trailing dims, the last dim first.
 * Built from differentiable ops: constant padding is narrow + cat with filled blocks, the other modes
 * an index select of the input's own rows (whose backward scatter-adds into them), so no pad kernel.
 */
import type { Tensor } from '../../tensor';
import { cat } from '../../ops/shape';
import { full, tensor } from '../../ops/creation';
import { shapeStr } from '../../ops/util';
import { argError, checkOptions, flockError } from '../../errors';
import { checkChoice, checkNumber, valueText } from '../../validate';
import { tensorArg } from './args';

export type PadMode = 'constant' | 'reflect' | 'replicate' | 'circular';
const PAD_MODES: readonly PadMode[] = ['constant', 'reflect', 'replicate', 'circular'];

export interface PadOptions {
  /** Default 'constant'. */
  mode?: PadMode;
  /** The fill of 'constant' padding (default 0); the other modes take none. */
  value?: number;
}

/** The pads as [dim, before, after] from the last dim back, checked against x. */
function padPairs(op: string, x: Tensor, pad: unknown): [number, number, number][] {
  if (!Array.isArray(pad) || !pad.every((p) => Number.isInteger(p)))
    throw argError(op, `pad must be an array of integers (last dim first: [left, right, top, bottom, …]), got ${valueText(pad)}`);
  if (pad.length % 2) throw argError(op, `pad must have an even length (a pair per dim), got ${valueText(pad)}`);
  if (pad.length > 2 * x.ndim)
    throw flockError('ERR_SHAPE', op, `pad ${valueText(pad)} names ${pad.length / 2} dims, but input ${shapeStr(x.shape)} has ${x.ndim}`);
  return Array.from({ length: pad.length / 2 }, (_, i) => [x.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]]);
}

/**
 * Pads `x` by `pad` = [before, after] pairs, the last dim first (`[left, right, top, bottom]` pads
 * W then H), as torch.nn.functional.pad. 'constant' pads any dims with `value` and crops where a pad
 * is negative; 'reflect' (mirror without the edge), 'replicate' (repeat the edge) and 'circular'
 * (wrap around) pad the last 1, 2 or 3 dims of a 2-5-D input (one or two leading batch dims), each
 * pad smaller than the dim ('reflect') or at most it ('circular'). Differentiable.
 */
export function pad(x: Tensor, pad: number[], options: PadOptions = {}): Tensor {
  const op = 'pad';
  const t = tensorArg(op, 'input', x);
  const o = checkOptions(op, options, ['mode', 'value']);
  const mode = checkChoice(op, 'mode', o.mode ?? 'constant', PAD_MODES);
  const pairs = padPairs(op, t, pad);
  for (const [d, a, b] of pairs)
    if (t.shape[d] + a + b < 0)
      throw flockError(
        'ERR_SHAPE',
        op,
        `pad ${valueText(pad)} makes dim ${d} of input ${shapeStr(t.shape)} negative (${t.shape[d]} + ${a} + ${b})`,
      );
  if (mode === 'constant') return padConstant(t, pairs, checkNumber(op, 'value', o.value ?? 0, { infinite: true }));
  if (o.value !== undefined && o.value !== 0) throw argError(op, `mode '${mode}' takes no value, got ${valueText(o.value)}`);
  const k = pairs.length;
  if (!(t.ndim === k + 1 || t.ndim === k + 2) || k > 3)
    throw flockError(
      'ERR_SHAPE',
      op,
      `mode '${mode}' pads the last 1, 2 or 3 dims of an input with 1 or 2 more (pad of length ${pad.length} needs a ${k + 1}-D or ${k + 2}-D input), got ${shapeStr(t.shape)}`,
    );
  let y = t;
  for (const [d, a, b] of pairs) {
    if (a === 0 && b === 0) continue;
    y = y.indexSelect(d, tensor(sourceRows(op, t.shape, d, a, b, mode), { device: t.device }));
  }
  return y;
}

/** The input row each output row of dim `d` reads, for pads `a` before and `b` after. */
function sourceRows(op: string, shape: readonly number[], d: number, a: number, b: number, mode: Exclude<PadMode, 'constant'>): Int32Array {
  const n = shape[d];
  if (n === 0 || shape.slice(1).some((s) => s === 0))
    throw flockError('ERR_SHAPE', op, `mode '${mode}' needs non-empty dims after the first, got ${shapeStr(shape)}`);
  if (mode === 'reflect' && (a >= n || b >= n))
    throw flockError(
      'ERR_SHAPE',
      op,
      `mode 'reflect' needs each pad smaller than the dim: pad (${a}, ${b}) for dim ${d} of ${shapeStr(shape)}`,
    );
  if (mode === 'circular') {
    // As PyTorch: negative pads crop first, and the wrap copies from what is left.
    const lo = Math.max(-a, 0),
      kept = n - lo - Math.max(-b, 0);
    if (a > kept || b > kept)
      throw flockError(
        'ERR_SHAPE',
        op,
        `mode 'circular' wraps at most once: pad (${a}, ${b}) for dim ${d} of ${shapeStr(shape)} (${kept} rows after cropping)`,
      );
    const front = Math.max(a, 0);
    return Int32Array.from({ length: n + a + b }, (_, j) => lo + ((((j - front) % kept) + kept) % kept));
  }
  return Int32Array.from({ length: n + a + b }, (_, j) => {
    const i = j - a;
    if (mode === 'replicate') return Math.min(Math.max(i, 0), n - 1);
    const r = Math.abs(i);
    return r < n ? r : 2 * (n - 1) - r;
  });
}

/** Crops the negative pads (narrow), then concatenates blocks of `value` on the positive ones. */
function padConstant(x: Tensor, pairs: [number, number, number][], value: number): Tensor {
  let y = x;
  for (const [d, a, b] of pairs) {
    if (a < 0 || b < 0) y = y.narrow(d, Math.max(-a, 0), y.shape[d] + Math.min(a, 0) + Math.min(b, 0));
    const block = (n: number) =>
      full(
        y.shape.map((s, i) => (i === d ? n : s)),
        value,
        { dtype: y.dtype, device: y.device },
      );
    const parts = [...(a > 0 ? [block(a)] : []), y, ...(b > 0 ? [block(b)] : [])];
    if (parts.length > 1) y = cat(parts, d);
  }
  return y;
}
