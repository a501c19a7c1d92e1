/**
 * The gradients of the shape ops that record a node (reshape, expand, permute, narrow, cat): the
 * gradient moved back to the input's shape. The rest are compositions of these.
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { sumTo, wrap } from '../util';
import { permute } from '../shape';
import { defineGrads } from './table';

declare module './table' {
  interface GradContexts {
    reshape: { input: Tensor };
    expand: { input: Tensor };
    permute: { dims: number[] };
    narrow: { input: Tensor; dim: number; start: number; length: number };
    cat: { tensors: Tensor[]; dim: number };
  }
}

defineGrads({
  reshape: { grad: (g, { input }) => [wrap(native.reshape(g.handle, [...input.shape]))] },
  expand: { grad: (g, { input }) => [sumTo(g, input.shape)] },
  permute: {
    grad: (g, { dims }) => {
      const inverse = new Array<number>(dims.length);
      dims.forEach((d, i) => (inverse[d] = i));
      return [permute(g, inverse)];
    },
  },
  // The gradient padded with zeros on both sides along `dim`.
  narrow: {
    grad: (g, { input: x, dim: d, start, length }) => {
      const parts: Tensor[] = [];
      const zerosAlong = (n: number) =>
        wrap(
          native.full(
            x.shape.map((s, i) => (i === d ? n : s)),
            g.dtype,
            g.device,
            0,
          ),
        );
      if (start > 0) parts.push(zerosAlong(start));
      parts.push(g);
      const after = x.shape[d] - start - length;
      if (after > 0) parts.push(zerosAlong(after));
      return [
        parts.length === 1
          ? g
          : wrap(
              native.cat(
                parts.map((p) => p.handle),
                d,
              ),
            ),
      ];
    },
  },
  cat: {
    grad: (g, { tensors, dim }) => {
      let at = 0;
      return tensors.map((t) => {
        const part = t.requiresGrad ? wrap(native.narrow(g.handle, dim, at, t.shape[dim])) : null;
        at += t.shape[dim];
        return part;
      });
    },
  },
});
