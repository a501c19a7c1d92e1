/**
 * Rotary embeddings as transformers' Llama computes them: inverse frequencies from rope_theta (with
 * the linear or Llama 3 scaling), angles position · inv_freq per row (positions come from the
 * attention mask, so left-padded rows rotate as if unpadded), q·cos + rotate_half(q)·sin.
 * The tables are built in JS with f32 rounding at the steps where transformers rounds to f32, so
 * they match its tables to an ulp.
 */
import type { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { cat } from '../ops/shape';
import type { RopeSettings } from './config';

const f32 = Math.fround;

/** inv_freq [headDim / 2] with the configured scaling (transformers' rope init functions). */
export function inverseFrequencies(headDim: number, theta: number, rope: RopeSettings): number[] {
  const inv = Array.from({ length: headDim / 2 }, (_, i) => f32(1 / f32(theta ** f32((2 * i) / headDim))));
  if (rope.kind === 'default') return inv;
  if (rope.kind === 'linear') return inv.map((f) => f32(f / rope.factor));
  const { factor, low, high, original } = rope;
  return inv.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < original / high) return f;
    if (wavelen > original / low) return f32(f / factor);
    const smooth = (original / wavelen - low) / (high - low);
    return f32(((1 - smooth) * f) / factor + smooth * f);
  });
}

/** cos and sin [batch, 1, t, headDim] for each row's positions. */
export function rotaryTables(positions: number[][], inv: number[], like: Tensor): { cos: Tensor; sin: Tensor } {
  const b = positions.length;
  const t = positions[0].length;
  const half = inv.length;
  const d = 2 * half;
  const cos = new Float32Array(b * t * d);
  const sin = new Float32Array(b * t * d);
  for (let r = 0; r < b; r++)
    for (let p = 0; p < t; p++) {
      const at = (r * t + p) * d;
      for (let i = 0; i < half; i++) {
        const a = f32(positions[r][p] * inv[i]);
        cos[at + i] = cos[at + i + half] = Math.cos(a);
        sin[at + i] = sin[at + i + half] = Math.sin(a);
      }
    }
  const opts = { dtype: like.dtype, device: like.device, shape: [b, 1, t, d] };
  return { cos: tensor(cos, opts), sin: tensor(sin, opts) };
}

/** x [batch, heads, t, headDim] rotated: x·cos + rotate_half(x)·sin, rotate_half([a, b]) = [-b, a]. */
export function applyRotary(x: Tensor, cos: Tensor, sin: Tensor): Tensor {
  const half = x.shape[3] / 2;
  const rotated = cat([x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)], -1);
  return x.mul(cos).add(rotated.mul(sin));
}

/**
 * One token per row (decoding): the rotation of each row's position as a [batch, headDim, headDim]
 * matrix R with x·R = x·cos + rotate_half(x)·sin, so that rotating a layer's queries or keys is one
 * batched product instead of seven element-wise ops (each costs more to queue than to run here).
 */
export function rotaryMatrices(positions: number[][], inv: number[], like: Tensor): Tensor {
  const b = positions.length;
  const half = inv.length;
  const d = 2 * half;
  const m = new Float32Array(b * d * d);
  for (let r = 0; r < b; r++) {
    const at = r * d * d;
    for (let i = 0; i < half; i++) {
      const a = f32(positions[r][0] * inv[i]);
      const c = Math.fround(Math.cos(a));
      const s = Math.fround(Math.sin(a));
      // Output i takes x_i·cos − x_{i+half}·sin; output i + half takes x_{i+half}·cos + x_i·sin.
      m[at + i * d + i] = c;
      m[at + (i + half) * d + i] = -s;
      m[at + (i + half) * d + i + half] = c;
      m[at + i * d + i + half] = s;
    }
  }
  return tensor(m, { dtype: like.dtype, device: like.device, shape: [b, d, d] });
}

/** x [batch, heads, 1, headDim] rotated by {@link rotaryMatrices}' R: x·R. */
export function applyRotaryMatrix(x: Tensor, r: Tensor): Tensor {
  const [b, h, , d] = x.shape;
  return x.reshape([b, h, d]).matmul(r).reshape([b, h, 1, d]);
}
