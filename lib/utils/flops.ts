/**
 * FLOPs of a training step, counted the usual way for MFU: 2·M·N·K per matmul and per convolution
 * (a multiply and an add per weight per output), forward only, then ×3 for a step (the backward
 * pass computes two products of the same size per layer: the input gradient and the weight
 * gradient). Element-wise ops, norms, pooling and the optimizer are left out: they are memory-bound
 * and small next to the products.
 */
import { noGrad } from '../dispatch/grad_mode';
import { tidy } from '../memory';
import { Conv2d, ConvTranspose2d } from '../nn/conv';
import { Linear } from '../nn/linear';
import type { Module } from '../nn/module';
import type { Tensor } from '../tensor';
import { argError, describe } from '../errors';
import { checkNumber, checkSizes, valueText } from '../validate';

/** 2·M·N·K: a `[m, k] @ [k, n]` product. */
export function matmulFlops(m: number, n: number, k: number): number {
  const op = 'matmulFlops';
  return 2 * checkNumber(op, 'm', m, { min: 0 }) * checkNumber(op, 'n', n, { min: 0 }) * checkNumber(op, 'k', k, { min: 0 });
}

/** Forward FLOPs of a Conv2d producing `outputNumel` values from `inChannels / groups × kh × kw` inputs each. */
export function conv2dFlops(outputNumel: number, inChannelsPerGroup: number, kernelSize: readonly [number, number]): number {
  const op = 'conv2dFlops';
  checkNumber(op, 'outputNumel', outputNumel, { min: 0 });
  checkNumber(op, 'inChannelsPerGroup', inChannelsPerGroup, { min: 0 });
  const [kh, kw] = checkSizes(op, 'kernelSize', kernelSize);
  if (kernelSize.length !== 2) throw argError(op, `kernelSize must be [kh, kw], got ${valueText(kernelSize)}`);
  return 2 * outputNumel * inChannelsPerGroup * kh * kw;
}

const numel = (t: Tensor) => t.shape.reduce((a, b) => a * b, 1);

/** Forward FLOPs of one layer call, or 0 for layers that are not counted. */
function layerFlops(m: Module, x: Tensor, y: Tensor): number {
  if (m instanceof Linear) return matmulFlops(numel(y) / m.outFeatures, m.outFeatures, m.inFeatures);
  const w = (m as { weight?: Tensor }).weight;
  if (m instanceof Conv2d && w) return conv2dFlops(numel(y), w.shape[1], m.kernelSize);
  // ConvTranspose2d: each input value is multiplied by outChannels / groups × kh × kw weights.
  if (m instanceof ConvTranspose2d && w) return conv2dFlops(numel(x), w.shape[1], m.kernelSize);
  return 0;
}

/**
 * Forward FLOPs of `model` on `input`, counted by running the forward pass once (without autograd,
 * its tensors freed) and adding up every Linear, Conv2d and ConvTranspose2d call it makes.
 */
export function forwardFlops(model: Module & { forward(x: Tensor): Tensor }, input: Tensor): number {
  if (typeof model?.forward !== 'function' || typeof model.modules !== 'function')
    throw argError('forwardFlops', `model must be a Module with forward(), got ${describe(model)}`);
  let total = 0;
  const patched: [Module, unknown][] = [];
  for (const m of model.modules()) {
    if (!(m instanceof Linear || m instanceof Conv2d || m instanceof ConvTranspose2d)) continue;
    const own = m.forward;
    patched.push([m, Object.hasOwn(m, 'forward') ? own : undefined]);
    m.forward = (x: Tensor) => {
      const y = own.call(m, x);
      total += layerFlops(m, x, y);
      return y;
    };
  }
  try {
    tidy(() => noGrad(() => void model.forward(input)));
  } finally {
    for (const [m, own] of patched) {
      if (own === undefined) delete (m as { forward?: unknown }).forward;
      else (m as { forward?: unknown }).forward = own;
    }
  }
  return total;
}

/** FLOPs of one training step (forward and backward) of `model` on a batch `input`: 3 × {@link forwardFlops}. */
export function stepFlops(model: Module & { forward(x: Tensor): Tensor }, input: Tensor): number {
  return 3 * forwardFlops(model, input);
}
