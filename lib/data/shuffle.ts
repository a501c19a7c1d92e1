/** The host-side generator of sample orders (DataLoader's shuffle, randomSplit), independent of the tensor RNG. */

/** splitmix32: a small, well-mixed generator for the shuffle (independent of the tensor RNG). */
export function shuffleRng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}
