/** The gradients of addmm and baddbmm: the product's, scaled by alpha, and beta times the gradient for input. */
import type { Tensor } from '../../tensor';
import { sumTo } from '../util';
import { mul } from '../elementwise';
import { productGrads } from '../linalg';
import { defineGrads } from './table';

/** `beta * input + alpha * (a @ b)`: mat1 and mat2 for addmm, batch1 and batch2 for baddbmm. */
type ScaledProduct = { input: Tensor; a: Tensor; b: Tensor; alpha: number; beta: number };

declare module './table' {
  interface GradContexts {
    addmm: ScaledProduct;
    baddbmm: ScaledProduct;
  }
}

function scaledProductGrad(g: Tensor, { input, a, b, alpha, beta }: ScaledProduct): (Tensor | null)[] {
  const [ga, gb] = productGrads(a, b, false, false, undefined, alpha === 1 ? g : mul(g, alpha));
  return [input.requiresGrad ? sumTo(mul(g, beta), input.shape) : null, ga, gb];
}

defineGrads({
  addmm: { grad: scaledProductGrad },
  baddbmm: { grad: scaledProductGrad },
});
