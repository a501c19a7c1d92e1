/** The gradients of flip and roll: the same move undone on the gradient. */
import { flip, roll } from '../rearrange';
import { defineGrads } from './table';

declare module './table' {
  interface GradContexts {
    flip: { dims: number[] };
    roll: { shifts: number[]; dims: number[] };
  }
}

defineGrads({
  flip: { grad: (g, { dims }) => [flip(g, dims)] },
  roll: {
    grad: (g, { shifts, dims }) => [
      roll(
        g,
        shifts.map((s) => -s),
        dims,
      ),
    ],
  },
});
