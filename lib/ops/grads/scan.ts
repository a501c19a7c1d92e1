/**
 * The gradients of cumsum and cumprod, each one native kernel (not a composition of recorded ops):
 * cumsum's is the running sum of the gradient taken from the end; cumprod's has a kernel of its own,
 * exact where the input holds zeros.
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { wrap } from '../util';
import { defineGrads } from './table';

declare module './table' {
  interface GradContexts {
    cumsum: { dim: number };
    cumprod: { input: Tensor; dim: number };
  }
}

defineGrads({
  cumsum: { grad: (g, { dim }) => [wrap(native.scan(g.handle, dim, false, true))] },
  cumprod: { grad: (g, { input, dim }) => [wrap(native.cumprodBackward(input.handle, g.handle, dim))] },
});
