/** The gradient of maskedSelect: the gradient scattered back to the positions the mask selected. */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { held, sumTo, wrap } from '../util';
import { defineGrads } from './table';

declare module './table' {
  interface GradContexts {
    // `mask` broadcast to the selection's shape, and how many elements it selected.
    maskedSelect: { input: Tensor; mask: Tensor; count: number };
  }
}

defineGrads({
  maskedSelect: {
    grad: (g, { input, mask: m, count: n }) => {
      // Scatter the gradient back to the flat positions of the true elements, then to the input's shape.
      const where = wrap(native.reshape(held(native.nonzero(held(native.reshape(m.handle, [m.numel()])), n)), [n]));
      const zeros = wrap(native.full([m.numel()], g.dtype, g.device, 0));
      const flat = wrap(native.scatterAdd(zeros.handle, 0, where.handle, g.handle));
      return [sumTo(wrap(native.reshape(flat.handle, [...m.shape])), input.shape)];
    },
  },
});
