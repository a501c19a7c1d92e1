/** Clearing gradients, shared by Module.zeroGrad and Optimizer.zeroGrad. */
import type { Tensor } from '../tensor';
import { tidy } from '../memory';
import { noGrad } from './grad_mode';
import { copy_ } from '../ops/elementwise';

/** Clears (setToNone, the default) or zeroes in place the `.grad` of each tensor. */
export function zeroGrads(params: Iterable<Tensor>, setToNone = true): void {
  for (const p of params) {
    const g = p.grad;
    if (!g) continue;
    if (setToNone) {
      g.dispose();
      p.grad = null;
    } else {
      tidy(() => noGrad(() => copy_(g, g.mul(0))));
    }
  }
}
