/**
 * fl.nn.init: in-place initialisers with PyTorch's formulas (fans, gains, kaiming's default
 * a = √5 for Linear/Conv weights). Draws come from the global Philox generator.
 */
import type { Tensor } from '../tensor';
import { noGrad } from '../autograd/grad_mode';
import { copy_ } from '../ops/elementwise';
import { full, rand, randn } from '../ops/creation';
import { rangeError } from '../ops/util';
import { tidy } from '../memory';

export type Nonlinearity = 'linear' | 'conv2d' | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' | 'selu';

/** The recommended gain for a nonlinearity (torch.nn.init.calculate_gain). */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  switch (nonlinearity) {
    case 'linear': case 'conv2d': case 'sigmoid': return 1;
    case 'tanh': return 5 / 3;
    case 'relu': return Math.SQRT2;
    case 'leaky_relu': { const s = param ?? 0.01; return Math.sqrt(2 / (1 + s * s)); }
    case 'selu': return 3 / 4;
  }
  throw rangeError('calculateGain', `unknown nonlinearity '${String(nonlinearity)}'`, 'ERR_RANGE');
}

/** [fanIn, fanOut] of a weight: dims 1 and 0 times the receptive field (dims 2…). */
export function fans(t: Tensor): [number, number] {
  if (t.ndim < 2) throw rangeError('init', `fan in and fan out need a tensor of at least 2 dims, got ${t.ndim}`);
  const field = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return [t.shape[1] * field, t.shape[0] * field];
}

/** Copies `src()` into t; the drawn temporary is freed at once (queued work keeps what it reads). */
function fill(t: Tensor, src: () => Tensor): Tensor {
  tidy(() => noGrad(() => {
    const s = src();
    copy_(t, s.dtype === t.dtype ? s : s.to(t.dtype));
  }));
  return t;
}

export function uniform_(t: Tensor, a = 0, b = 1): Tensor {
  return fill(t, () => rand([...t.shape], { low: a, high: b, dtype: t.dtype === 'f64' ? 'f64' : 'f32', device: t.device }));
}

export function normal_(t: Tensor, mean = 0, std = 1): Tensor {
  return fill(t, () => randn([...t.shape], { mean, std, dtype: t.dtype === 'f64' ? 'f64' : 'f32', device: t.device }));
}

export function constant_(t: Tensor, value: number): Tensor {
  return fill(t, () => full([...t.shape], value, { dtype: t.dtype, device: t.device }));
}
export const zeros_ = (t: Tensor): Tensor => constant_(t, 0);
export const ones_ = (t: Tensor): Tensor => constant_(t, 1);

export function xavierUniform_(t: Tensor, gain = 1): Tensor {
  const [fi, fo] = fans(t);
  const a = gain * Math.sqrt(6 / (fi + fo));
  return uniform_(t, -a, a);
}

export function xavierNormal_(t: Tensor, gain = 1): Tensor {
  const [fi, fo] = fans(t);
  return normal_(t, 0, gain * Math.sqrt(2 / (fi + fo)));
}

export interface KaimingOptions {
  a?: number;
  mode?: 'fanIn' | 'fanOut';
  nonlinearity?: Nonlinearity;
}

function kaimingStd(t: Tensor, o: KaimingOptions): number {
  const [fi, fo] = fans(t);
  const fan = (o.mode ?? 'fanIn') === 'fanIn' ? fi : fo;
  return calculateGain(o.nonlinearity ?? 'leaky_relu', o.a ?? 0) / Math.sqrt(fan);
}

export function kaimingUniform_(t: Tensor, options: KaimingOptions = {}): Tensor {
  const bound = Math.sqrt(3) * kaimingStd(t, options);
  return uniform_(t, -bound, bound);
}

export function kaimingNormal_(t: Tensor, options: KaimingOptions = {}): Tensor {
  return normal_(t, 0, kaimingStd(t, options));
}

/** PyTorch's default for Linear and Conv: kaiming_uniform(a=√5) weights, U(±1/√fanIn) bias. */
export function defaultLayerInit_(weight: Tensor, bias: Tensor | null): void {
  kaimingUniform_(weight, { a: Math.sqrt(5) });
  if (bias) {
    const [fi] = fans(weight);
    const bound = fi > 0 ? 1 / Math.sqrt(fi) : 0;
    uniform_(bias, -bound, bound);
  }
}
