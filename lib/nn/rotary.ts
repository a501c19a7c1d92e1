/**
 * Rotary position embedding (RoPE, Su et al.): rotates each pair of features of a query or key by
 * an angle proportional to its position, so q·k depends on the positions' difference. Uses the
 * half-split pairing (feature i with i + d/2), as GPT-NeoX and LLaMA do.
 */
import type { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { cat } from '../ops/shape';
import { Module } from './module';
import { tensorArg } from './functional/args';
import { checkOptions, flockError, outOfRange, shapeError } from '../errors';
import { checkInt, checkNumber } from '../validate';
import { shapeStr } from '../ops/util';

export interface RotaryOptions {
  /** The angle base: pair i turns by position · base^(-2i/d) (default 10000). */
  base?: number;
}

/** cos and sin tables [t, d] for positions offset..offset+t-1 (each frequency repeated for both halves). */
export function rotaryTables(t: number, d: number, base = 10000, offset = 0): { cos: number[]; sin: number[] } {
  const op = 'rotaryTables';
  checkInt(op, 't', t);
  if (checkInt(op, 'd', d) % 2 !== 0) throw outOfRange(op, `d must be even (features turn in pairs), got ${d}`);
  checkNumber(op, 'base', base, { min: 0 });
  checkInt(op, 'offset', offset);
  // Two JS arrays of 8-byte numbers: 1 GiB at the bound, within Node's default heap.
  if (t * d > 2 ** 26) throw outOfRange(op, `t·d = ${t}·${d} is more than the 2^26 values a table holds`);
  const cos: number[] = new Array(t * d);
  const sin: number[] = new Array(t * d);
  const half = d / 2;
  for (let p = 0; p < t; p++)
    for (let i = 0; i < d; i++) {
      const a = (offset + p) * base ** ((-2 * (i % half)) / d);
      cos[p * d + i] = Math.cos(a);
      sin[p * d + i] = Math.sin(a);
    }
  return { cos, sin };
}

/**
 * x [..., t, d] rotated for positions offset.. offset+t-1: x·cos + rotateHalf(x)·sin with
 * rotateHalf([a, b]) = [-b, a]. Differentiable in x.
 */
export function applyRotary(x: Tensor, options: RotaryOptions & { offset?: number } = {}): Tensor {
  const op = 'applyRotary';
  tensorArg(op, 'input', x);
  const o = checkOptions(op, options, ['base', 'offset']);
  const base = checkNumber(op, 'base', o.base ?? 10000, { min: 0 });
  const offset = checkInt(op, 'offset', o.offset ?? 0, 0);
  if (x.ndim < 2) throw shapeError(op, `input must be [..., seq, dim], got ${shapeStr(x.shape)}`);
  const [t, d] = x.shape.slice(-2);
  if (d % 2 !== 0) throw flockError('ERR_SHAPE', op, `the feature size must be even, got ${d} in ${shapeStr(x.shape)}`);
  const { cos, sin } = rotaryTables(t, d, base, offset);
  const opts = { dtype: x.dtype, device: x.device, shape: [t, d] };
  const half = d / 2;
  const rotated = cat([x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)], -1);
  return x.mul(tensor(Float64Array.from(cos), opts)).add(rotated.mul(tensor(Float64Array.from(sin), opts)));
}

/** The module form: holds the feature size and base; forward(x, offset) rotates x [..., t, dim]. */
export class RotaryEmbedding extends Module {
  readonly base: number;

  constructor(
    readonly dim: number,
    options: RotaryOptions = {},
  ) {
    super();
    checkInt('RotaryEmbedding', 'dim', dim, 2);
    if (dim % 2 !== 0) throw flockError('ERR_ARG', 'RotaryEmbedding', `dim must be even, got ${dim}`);
    this.base = checkNumber('RotaryEmbedding', 'base', checkOptions('RotaryEmbedding', options, ['base']).base ?? 10000, { min: 0 });
  }

  forward(x: Tensor, offset = 0): Tensor {
    if (x.ndim >= 1 && x.shape[x.ndim - 1] !== this.dim)
      throw shapeError('RotaryEmbedding', `input ${shapeStr(x.shape)} must end in dim ${this.dim}`);
    return applyRotary(x, { base: this.base, offset });
  }
}
