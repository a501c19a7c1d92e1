/** The gradients of tril and triu: the same triangle of the gradient. */
import { tril, triu } from '../generated/kernel_ops';
import { defineGrads } from './table';

defineGrads({
  tril: { grad: (g, { diagonal }) => [tril(g, diagonal)] },
  triu: { grad: (g, { diagonal }) => [triu(g, diagonal)] },
});
