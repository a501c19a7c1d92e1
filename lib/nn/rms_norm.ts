/** RMSNorm: x / √(mean(x²) + eps) · weight over the trailing normalizedShape dims (PyTorch's nn.RMSNorm). */
import type { Tensor } from '../tensor';
import type { DType } from '../dtype';
import { ones } from '../ops/creation';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { tensorArg, tensorOptions } from './functional/args';
import { checkOptions, flockError, shapeError } from '../errors';
import { checkBool, checkNumber, checkSizes } from '../validate';
import { shapeStr } from '../ops/util';

/** The machine epsilon of a float dtype: RMSNorm's default eps, as torch.finfo(dtype).eps. */
const EPS: Partial<Record<DType, number>> = { f32: 2 ** -23, f64: 2 ** -52, bf16: 2 ** -7, f16: 2 ** -10 };

/** The functional form: normalises x over its last normalizedShape.length dims. */
export function rmsNorm(x: Tensor, normalizedShape: number[], weight: Tensor | null = null, eps: number | null = null): Tensor {
  const op = 'rmsNorm';
  tensorArg(op, 'input', x);
  const ns = checkSizes(op, 'normalizedShape', normalizedShape, 0);
  const k = ns.length;
  if (x.ndim < k || ns.some((s, i) => x.shape[x.ndim - k + i] !== s))
    throw shapeError(op, `input ${shapeStr(x.shape)} does not end in normalizedShape ${shapeStr(ns)}`);
  const e = eps === null ? EPS[x.dtype] : checkNumber(op, 'eps', eps, { min: 0 });
  if (e === undefined) throw flockError('ERR_DTYPE', op, `input must be a floating tensor, got ${x.dtype}`);
  const dims = Array.from({ length: k }, (_, i) => x.ndim - k + i);
  const y = x.mul(x.mul(x).mean(dims, true).add(e).rsqrt());
  return weight ? y.mul(weight) : y;
}

export interface RMSNormOptions {
  /** Added to the mean square (default: the dtype's machine epsilon, as PyTorch). */
  eps?: number | null;
  /** A learned per-element scale, initialised to ones (default true). */
  elementwiseAffine?: boolean;
  dtype?: DType;
  device?: string;
}

export class RMSNorm extends Module {
  weight: Parameter | null;
  readonly normalizedShape: number[];
  readonly eps: number | null;

  constructor(normalizedShape: number | number[], options: RMSNormOptions = {}) {
    super();
    const o = checkOptions('RMSNorm', options, ['eps', 'elementwiseAffine', 'dtype', 'device']);
    this.normalizedShape = checkSizes('RMSNorm', 'normalizedShape', normalizedShape, 0);
    this.eps = o.eps === undefined || o.eps === null ? null : checkNumber('RMSNorm', 'eps', o.eps, { min: 0 });
    const affine = checkBool('RMSNorm', 'elementwiseAffine', o.elementwiseAffine ?? true);
    this.weight = affine ? ownParameter(ones(this.normalizedShape, tensorOptions('RMSNorm', o))) : null;
  }

  forward(x: Tensor): Tensor {
    return rmsNorm(x, this.normalizedShape, this.weight, this.eps);
  }

  override extraRepr(): string {
    return `${pyRepr(this.normalizedShape)}, eps=${pyRepr(this.eps, true)}, elementwise_affine=${pyRepr(this.weight !== null)}`;
  }
}
