/** `t.backward()`: the backward pass (lib/autograd/engine.ts) as a Tensor method. */
import { Tensor } from '../tensor';
import { backward } from './engine';

declare module '../tensor' {
  interface Tensor {
    /**
     * Computes gradients of this tensor with respect to graph leaves (accumulated into `.grad`).
     * `grad` defaults to ones for a one-element tensor. Backward frees the graph (what its ops
     * saved) as it goes, so a second backward through it throws, unless `retainGraph` is true.
     * `t.backward({ retainGraph: true })` is short for `t.backward(undefined, { retainGraph: true })`.
     */
    backward(options?: { retainGraph?: boolean }): void;
    backward(grad?: Tensor | null, options?: { retainGraph?: boolean }): void;
  }
}

Object.defineProperty(Tensor.prototype, 'backward', {
  value(this: Tensor, grad?: unknown, options?: unknown) {
    backward(this, grad, options);
  },
  writable: true,
  configurable: true,
  enumerable: false,
});
