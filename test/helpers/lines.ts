/** Plain-JS helpers for ops along one dim: the flat offsets of every line of a row-major shape. */

/** For each line along `dim` of `shape`, the flat offsets of its elements in order. */
export function linesAlong(shape: number[], dim: number): number[][] {
  const d = dim < 0 ? dim + shape.length : dim;
  const n = shape.length === 0 ? 1 : shape[d];
  const inner = shape.slice(d + 1).reduce((a, b) => a * b, 1);
  const outer = shape.slice(0, d).reduce((a, b) => a * b, 1);
  const lines: number[][] = [];
  for (let o = 0; o < outer; o++) for (let i = 0; i < inner; i++) lines.push(Array.from({ length: n }, (_, r) => (o * n + r) * inner + i));
  return lines;
}

/** Applies `f` to every line along `dim` of `values`, writing its results back at the same offsets. */
export function mapLines(values: ArrayLike<number>, shape: number[], dim: number, f: (line: number[]) => number[]): number[] {
  const out = Array.from(values);
  for (const offs of linesAlong(shape, dim)) {
    const r = f(offs.map((o) => values[o]));
    offs.forEach((o, k) => {
      out[o] = r[k];
    });
  }
  return out;
}
