/** Direct calls of the fused native optimizer steps with fixed hyperparameters, for tests of their input checks. */
import type { Tensor } from '../../lib/index';
import { native } from '../../lib/native';

const h = (ts: Tensor[]) => ts.map((t) => t.handle);

/** native.adamStep with lr 0.1, betas 0.9/0.999, eps 1e-8, step 1, no weight decay, amsgrad, maximize or stochastic rounding. */
export function rawAdamStep(params: Tensor[], grads: Tensor[], expAvg: Tensor[], expAvgSq: Tensor[], masters: Tensor[] = []): void {
  native.adamStep(
    h(params),
    h(grads),
    h(expAvg),
    h(expAvgSq),
    [],
    0.1,
    0.9,
    0.999,
    1e-8,
    0,
    1,
    false,
    false,
    false,
    h(masters),
    false,
    0,
    0,
  );
}

/** native.sgdStep as a first step with lr 0.1 and no momentum, weight decay, maximize or stochastic rounding. */
export function rawSgdStep(params: Tensor[], grads: Tensor[], masters: Tensor[] = []): void {
  native.sgdStep(h(params), h(grads), [], 0.1, 0, 0, 0, false, true, false, h(masters), false, 0, 0);
}
