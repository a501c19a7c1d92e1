/** The gradients of sort and topk: the values' gradient added back where the indices picked them. */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { wrap } from '../util';
import { defineGrads } from './table';

/** What sort and topk hand their formula: the input, the dim and the indices they returned. */
type Picked = { input: Tensor; dim: number; indices: Tensor };

declare module './table' {
  interface GradContexts {
    sort: Picked;
    topk: Picked;
  }
}

function picked(g: Tensor, { input, dim, indices }: Picked): Tensor[] {
  if (input.ndim === 0) return [g];
  const zeros = wrap(native.full([...input.shape], g.dtype, g.device, 0));
  return [wrap(native.scatterAdd(zeros.handle, dim, indices.handle, g.handle))];
}

defineGrads({
  sort: { grad: picked },
  topk: { grad: picked },
});
