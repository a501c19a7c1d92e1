/** Clearing gradients, shared by Module.zeroGrad and Optimizer.zeroGrad. */
import type { Tensor } from '../tensor';
import { noGrad } from '../dispatch/grad_mode';
import { zero_ } from '../ops/inplace';

/**
 * Clears (setToNone, the default) or zeroes in place the `.grad` of each tensor. Zeroing writes
 * zeros over whatever was there (an inf or NaN gradient of a step GradScaler skipped included) with
 * no temporary; a `.grad` assigned with a history (a gradFn) is detached first, as PyTorch does.
 */
export function zeroGrads(params: Iterable<Tensor>, setToNone = true): void {
  for (const p of params) {
    const g = p.grad;
    if (!g) continue;
    if (setToNone) {
      g.dispose();
      p.grad = null;
    } else {
      if (g.gradFn) {
        g.gradFn = null;
        g.requiresGrad = false;
      }
      noGrad(() => zero_(g));
    }
  }
}
