/**
 * GPT-2's GELU, the tanh approximation 0.5·h·(1 + tanh(√(2/π)·(h + 0.044715·h³))), written as
 * h·σ(2·√(2/π)·(h + 0.044715·h³)) (the same function: 0.5·(1 + tanh(z)) = σ(2z)). The CPU's tanh
 * kernel is scalar (measured 11 ns per element against the sigmoid's 1), so on a [1024, 1536]
 * MLP activation this form ran forward in 4.5 ms against 36 ms, and forward plus backward in
 * 30 ms against 70-90 ms; the two agree to 2e-7 (relative).
 */
import type { Tensor } from '../tensor';

const K = 2 * Math.sqrt(2 / Math.PI);
const A = 0.044715;

export function geluTanh(h: Tensor): Tensor {
  return h.mul(
    h
      .square()
      .mul(K * A)
      .add(K)
      .mul(h)
      .sigmoid(),
  );
}
