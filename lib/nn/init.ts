/**
 * fl.nn.init: in-place initialisers with PyTorch's formulas (fans, gains, kaiming's default
 * a = √5 for Linear/Conv weights). Draws come from the global Philox generator.
 */
import type { Tensor } from '../tensor';
import { isFloating } from '../dtype';
import { noGrad } from '../dispatch/grad_mode';
import { copy_ } from '../ops/elementwise';
import { full, rand, randn } from '../ops/creation';
import { tidy } from '../memory';
import { argError, checkOptions, describe, flockError, shapeError } from '../errors';
import { checkChoice, checkNumber, checkTensorArg } from '../validate';

export type Nonlinearity = 'linear' | 'conv2d' | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' | 'selu';
const NONLINEARITIES: readonly Nonlinearity[] = ['linear', 'conv2d', 'sigmoid', 'tanh', 'relu', 'leaky_relu', 'selu'];

/** The recommended gain for a nonlinearity (torch.nn.init.calculate_gain). */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  return gainOf('calculateGain', nonlinearity, param);
}

function gainOf(op: string, nonlinearity: unknown, param?: unknown): number {
  checkChoice(op, 'nonlinearity', nonlinearity, NONLINEARITIES);
  if (param !== undefined) checkNumber(op, 'param', param);
  switch (nonlinearity as Nonlinearity) {
    case 'linear':
    case 'conv2d':
    case 'sigmoid':
      return 1;
    case 'tanh':
      return 5 / 3;
    case 'relu':
      return Math.SQRT2;
    case 'leaky_relu': {
      const s = (param as number | undefined) ?? 0.01;
      return Math.sqrt(2 / (1 + s * s));
    }
    default:
      return 3 / 4; // selu
  }
}

/** [fanIn, fanOut] of a weight: dims 1 and 0 times the receptive field (dims 2…). */
export function fans(t: Tensor): [number, number] {
  return fansOf('fans', t);
}

function fansOf(op: string, t: Tensor): [number, number] {
  checkTensorArg(op, 'tensor', t);
  if (t.ndim < 2) throw shapeError(op, `fan in and fan out need a tensor of at least 2 dims, got [${t.shape.join(',')}]`);
  const field = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return [t.shape[1] * field, t.shape[0] * field];
}

/** A tensor to fill in place, checked as `op`: live and floating (random draws are real numbers). */
function target(op: string, t: unknown, floating = true): Tensor {
  const x = checkTensorArg(op, 'tensor', t);
  if (floating && !isFloating(x.dtype)) throw flockError('ERR_DTYPE', op, `expected a floating tensor, got ${x.dtype}`);
  return x;
}

/** Depth of {@link withoutInit} calls: while above 0 the initialisers leave their tensors alone. */
let skipping = 0;

/**
 * @internal Runs `fn` (a model's construction) with every initialiser here a no-op, as
 * transformers' no_init_weights: a model whose parameters a checkpoint is about to overwrite then
 * skips the random draws, their time and the temporaries they hold in the device queue. The
 * parameters keep what their creation gave them (zeros or ones).
 */
export function withoutInit<T>(fn: () => T): T {
  if (typeof fn !== 'function') throw argError('nn.init.withoutInit', `fn must be a function, got ${describe(fn)}`);
  skipping++;
  try {
    return fn();
  } finally {
    skipping--;
  }
}

/** Copies `src()` into t; the drawn temporary is freed at once (queued work keeps what it reads). */
function fill(t: Tensor, src: () => Tensor): Tensor {
  if (skipping > 0) return t;
  tidy(() =>
    noGrad(() => {
      const s = src();
      copy_(t, s.dtype === t.dtype ? s : s.to(t.dtype));
    }),
  );
  return t;
}

export function uniform_(t: Tensor, a = 0, b = 1): Tensor {
  return uniformAs('uniform_', t, a, b);
}

function uniformAs(op: string, t: Tensor, a: number, b: number): Tensor {
  target(op, t);
  checkNumber(op, 'a', a);
  checkNumber(op, 'b', b);
  if (a > b) throw flockError('ERR_RANGE', op, `a must be ≤ b, got a ${a}, b ${b}`);
  return fill(t, () => rand([...t.shape], { low: a, high: b, dtype: t.dtype === 'f64' ? 'f64' : 'f32', device: t.device }));
}

export function normal_(t: Tensor, mean = 0, std = 1): Tensor {
  return normalAs('normal_', t, mean, std);
}

function normalAs(op: string, t: Tensor, mean: number, std: number): Tensor {
  target(op, t);
  checkNumber(op, 'mean', mean);
  checkNumber(op, 'std', std, { min: 0 });
  return fill(t, () => randn([...t.shape], { mean, std, dtype: t.dtype === 'f64' ? 'f64' : 'f32', device: t.device }));
}

export function constant_(t: Tensor, value: number): Tensor {
  return constantAs('constant_', t, value);
}

function constantAs(op: string, t: Tensor, value: number): Tensor {
  target(op, t, false);
  checkNumber(op, 'value', value, { infinite: true });
  return fill(t, () => full([...t.shape], value, { dtype: t.dtype, device: t.device }));
}
export const zeros_ = (t: Tensor): Tensor => constantAs('zeros_', t, 0);
export const ones_ = (t: Tensor): Tensor => constantAs('ones_', t, 1);

export function xavierUniform_(t: Tensor, gain = 1): Tensor {
  const [fi, fo] = fansOf('xavierUniform_', t);
  checkNumber('xavierUniform_', 'gain', gain, { min: 0 });
  if (fi + fo === 0) return t;
  const a = gain * Math.sqrt(6 / (fi + fo));
  return uniformAs('xavierUniform_', t, -a, a);
}

export function xavierNormal_(t: Tensor, gain = 1): Tensor {
  const [fi, fo] = fansOf('xavierNormal_', t);
  checkNumber('xavierNormal_', 'gain', gain, { min: 0 });
  if (fi + fo === 0) return t;
  return normalAs('xavierNormal_', t, 0, gain * Math.sqrt(2 / (fi + fo)));
}

export interface KaimingOptions {
  /** The negative slope of the rectifier after this layer (leaky_relu only; default 0). */
  a?: number;
  mode?: 'fanIn' | 'fanOut';
  nonlinearity?: Nonlinearity;
}

function kaimingStd(op: string, t: Tensor, options: KaimingOptions | undefined): number {
  const o = checkOptions(op, options, ['a', 'mode', 'nonlinearity']);
  const [fi, fo] = fansOf(op, t);
  const mode = checkChoice(op, 'mode', o.mode ?? 'fanIn', ['fanIn', 'fanOut']);
  const fan = mode === 'fanIn' ? fi : fo;
  if (fan === 0) return 0; // a zero-element tensor: nothing to draw, as PyTorch
  return gainOf(op, o.nonlinearity ?? 'leaky_relu', checkNumber(op, 'a', o.a ?? 0)) / Math.sqrt(fan);
}

export function kaimingUniform_(t: Tensor, options: KaimingOptions = {}): Tensor {
  const bound = Math.sqrt(3) * kaimingStd('kaimingUniform_', t, options);
  return uniformAs('kaimingUniform_', t, -bound, bound);
}

export function kaimingNormal_(t: Tensor, options: KaimingOptions = {}): Tensor {
  return normalAs('kaimingNormal_', t, 0, kaimingStd('kaimingNormal_', t, options));
}

/** PyTorch's default for Linear and Conv: kaiming_uniform(a=√5) weights, U(±1/√fanIn) bias. */
export function defaultLayerInit_(weight: Tensor, bias: Tensor | null): void {
  const [fi] = fansOf('defaultLayerInit_', weight);
  // A layer with no inputs (fan-in 0) stays zero, as PyTorch warns and skips.
  if (fi > 0) kaimingUniform_(weight, { a: Math.sqrt(5) });
  if (bias) {
    const bound = fi > 0 ? 1 / Math.sqrt(fi) : 0;
    uniform_(bias, -bound, bound);
  }
}
