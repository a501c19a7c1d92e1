/**
 * The gradients of indexSelect, gather, scatterAdd and indexAdd: what one moves by the index, the
 * other moves back (a gather's gradient is a scatter-add, and the reverse).
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { wrap } from '../util';
import { mul } from '../elementwise';
import { defineGrads } from './table';

declare module './table' {
  interface GradContexts {
    indexSelect: { input: Tensor; dim: number; index: Tensor };
    gather: { input: Tensor; dim: number; index: Tensor };
    scatterAdd: { dim: number; index: Tensor; src: Tensor };
    indexAdd: { dim: number; index: Tensor; source: Tensor; alpha: number };
  }
}

defineGrads({
  indexSelect: {
    grad: (g, { input, dim, index }) => {
      // Scatter-add rows back: the index broadcast along every other dim of the gradient.
      const shape = g.shape.map((_, i) => (i === dim ? index.numel() : 1));
      const idx = wrap(native.expand(wrap(native.reshape(index.handle, shape)).handle, [...g.shape]));
      const zeros = wrap(native.full([...input.shape], g.dtype, g.device, 0));
      return [wrap(native.scatterAdd(zeros.handle, dim, idx.handle, g.handle))];
    },
  },
  gather: {
    grad: (g, { input, dim, index }) => {
      const zeros = wrap(native.full([...input.shape], g.dtype, g.device, 0));
      return [wrap(native.scatterAdd(zeros.handle, dim, index.handle, g.handle))];
    },
  },
  scatterAdd: { grad: (g, { dim, index, src }) => [g, src.requiresGrad ? wrap(native.gather(g.handle, dim, index.handle)) : null] },
  indexAdd: {
    grad: (g, { dim, index, source, alpha }) => [
      g,
      source.requiresGrad ? mul(wrap(native.indexSelect(g.handle, dim, index.handle)), alpha) : null,
    ],
  },
});
