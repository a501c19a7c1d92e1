/**
 * einsum over matmul, permute, reshape, sum and indexSelect (for diagonals), so its gradient comes
 * from theirs. Supported: explicit ('ij,jk->ik') and implicit ('ij,jk') outputs, one '...' per
 * term (broadcast like NumPy), labels repeated within one operand (diagonals, traces), sums,
 * outer and batch products, any number of operands (contracted left to right).
 */
import type { Tensor } from '../tensor';
import { describe } from '../errors';
import { isFloating } from '../dtype';
import { checkTensor, rangeError, shapeStr, typeError } from './util';
import { matmul } from './linalg';
import { permute, reshape } from './shape';
import { sum } from './reduce';
import { indexSelect } from './indexing';
import { arange } from './creation';

/** An operand and the label of each of its dims (ellipsis dims get labels that are not letters). */
interface Term {
  t: Tensor;
  labels: string[];
}

const ELLIPSIS = (i: number) => `…${i}`;

function fail(equation: string, why: string): Error {
  return typeError('einsum', `${why} in '${equation}'`);
}

function parseTerm(equation: string, term: string, where: string): { letters: string[]; ellipsisAt: number } {
  const letters: string[] = [];
  let ellipsisAt = -1;
  for (let i = 0; i < term.length; i++) {
    const c = term[i];
    if (c === '.') {
      if (term.slice(i, i + 3) !== '...' || ellipsisAt >= 0) throw fail(equation, `${where} has a stray '.' or more than one '...'`);
      ellipsisAt = letters.length;
      i += 2;
    } else if (/^[a-zA-Z]$/.test(c)) {
      letters.push(c);
    } else {
      throw fail(equation, `${where} has '${c}', which is not a letter or '...'`);
    }
  }
  return { letters, ellipsisAt };
}

/** Takes the diagonal of every label repeated within one operand (its dims must have one size). */
function diagonals(equation: string, term: Term, index: number): Term {
  let { t, labels } = term;
  for (;;) {
    const dup = labels.find((l, i) => labels.indexOf(l) !== i);
    if (dup === undefined) return { t, labels };
    const at = labels.flatMap((l, i) => (l === dup ? [i] : []));
    const n = t.shape[at[0]];
    if (at.some((i) => t.shape[i] !== n))
      throw rangeError(
        'einsum',
        `operand ${index} repeats '${dup}' over dims of different sizes (shape ${shapeStr(t.shape)}) in '${equation}'`,
      );
    const rest = labels.map((_, i) => i).filter((i) => !at.includes(i));
    const moved = permute(t, [...rest, ...at]);
    const flat = reshape(moved, [...rest.map((i) => t.shape[i]), n ** at.length]);
    // Element (i, i, ..., i) of the flattened block sits at i * (n^(k-1) + ... + n + 1).
    const step = Array.from({ length: at.length }, (_, k) => n ** k).reduce((a, b) => a + b, 0);
    const idx = arange(0, n * step, step, { device: t.device });
    t = indexSelect(flat, rest.length, idx);
    labels = [...rest.map((i) => labels[i]), dup];
  }
}

/** Sums away the labels of `term` outside `keep`. */
function sumOut(term: Term, keep: Set<string>): Term {
  const dims = term.labels.flatMap((l, i) => (keep.has(l) ? [] : [i]));
  if (dims.length === 0) return term;
  return { t: sum(term.t, dims), labels: term.labels.filter((l) => keep.has(l)) };
}

function sizeOf(term: Term, label: string): number {
  return term.t.shape[term.labels.indexOf(label)];
}

/** Contracts two operands with one batched matmul: [batch, A-only, shared] x [batch, shared, B-only]. */
function contract(a: Term, b: Term, keep: Set<string>): Term {
  const inB = new Set(b.labels);
  const batch = a.labels.filter((l) => inB.has(l) && keep.has(l));
  const shared = a.labels.filter((l) => inB.has(l) && !keep.has(l));
  const aOnly = a.labels.filter((l) => !inB.has(l));
  const bOnly = b.labels.filter((l) => !a.labels.includes(l));
  const pa = permute(
    a.t,
    [...batch, ...aOnly, ...shared].map((l) => a.labels.indexOf(l)),
  );
  const pb = permute(
    b.t,
    [...batch, ...shared, ...bOnly].map((l) => b.labels.indexOf(l)),
  );
  const prod = (term: Term, ls: string[]) => ls.reduce((n, l) => n * sizeOf(term, l), 1);
  const ma = reshape(pa, [...batch.map((l) => sizeOf(a, l)), prod(a, aOnly), prod(a, shared)]);
  const mb = reshape(pb, [...batch.map((l) => sizeOf(b, l)), prod(b, shared), prod(b, bOnly)]);
  const out = matmul(ma, mb);
  const batchSizes = out.shape.slice(0, batch.length);
  return {
    t: reshape(out, [...batchSizes, ...aOnly.map((l) => sizeOf(a, l)), ...bOnly.map((l) => sizeOf(b, l))]),
    labels: [...batch, ...aOnly, ...bOnly],
  };
}

/** Einstein summation, as torch.einsum: `einsum('bij,bjk->bik', a, b)`. */
export function einsum(equation: string, ...operands: Tensor[]): Tensor {
  if (typeof equation !== 'string') throw typeError('einsum', `equation must be a string, got ${describe(equation)}`);
  const eq = equation.replace(/\s+/g, '');
  if (operands.length === 1 && Array.isArray(operands[0])) operands = operands[0] as unknown as Tensor[];
  if (operands.length === 0) throw typeError('einsum', 'expected at least one operand');
  operands.forEach((t, i) => checkTensor('einsum', `operands[${i}]`, t));
  operands.forEach((t, i) => {
    if (t.dtype !== operands[0].dtype)
      throw typeError('einsum', `operands must share a dtype, got ${operands[0].dtype} and ${t.dtype} (operand ${i})`, 'ERR_DTYPE');
  });
  // Contractions run on the floating GEMM; every equation is refused alike for other dtypes.
  if (!isFloating(operands[0].dtype))
    throw typeError('einsum', `operands must be floating (f32, f64, bf16, f16), got ${operands[0].dtype}`, 'ERR_DTYPE');
  const arrow = eq.indexOf('->');
  if (arrow >= 0 && eq.indexOf('->', arrow + 1) >= 0) throw fail(equation, "more than one '->'");
  const lhs = arrow >= 0 ? eq.slice(0, arrow) : eq;
  const specs = lhs.split(',');
  if (specs.length !== operands.length)
    throw rangeError('einsum', `'${equation}' has ${specs.length} input terms but ${operands.length} operands were given`);

  // Label every dim; ellipsis dims are right-aligned across operands and broadcast.
  let ellipsisDims = 0;
  const parsed = specs.map((s, i) => parseTerm(equation, s, `term ${i}`));
  parsed.forEach((p, i) => {
    const extra = operands[i].ndim - p.letters.length;
    if (p.ellipsisAt < 0 ? extra !== 0 : extra < 0)
      throw rangeError(
        'einsum',
        `term '${specs[i]}' names ${p.letters.length} dims but operand ${i} has shape ${shapeStr(operands[i].shape)} in '${equation}'`,
      );
    if (p.ellipsisAt >= 0) ellipsisDims = Math.max(ellipsisDims, extra);
  });
  const ellipsisLabels = Array.from({ length: ellipsisDims }, (_, i) => ELLIPSIS(i));
  let terms: Term[] = parsed.map((p, i) => {
    const extra = operands[i].ndim - p.letters.length;
    const labels =
      p.ellipsisAt < 0
        ? p.letters
        : [...p.letters.slice(0, p.ellipsisAt), ...ellipsisLabels.slice(ellipsisDims - extra), ...p.letters.slice(p.ellipsisAt)];
    return { t: operands[i], labels };
  });

  // Sizes: a letter has one size everywhere; an ellipsis dim broadcasts (sizes equal or 1).
  const size = new Map<string, number>();
  terms.forEach((term, i) =>
    term.labels.forEach((l, d) => {
      const s = term.t.shape[d];
      const seen = size.get(l);
      const ok = seen === undefined || seen === s || (l.startsWith('…') && (seen === 1 || s === 1));
      if (!ok)
        throw rangeError(
          'einsum',
          `'${l.startsWith('…') ? '...' : l}' has size ${seen} and ${s} (operand ${i}, shape ${shapeStr(term.t.shape)}) in '${equation}'`,
        );
      if (seen === undefined || seen === 1) size.set(l, s);
    }),
  );

  // Output labels: explicit, or the letters used once in alphabetical order after the ellipsis.
  let out: string[];
  if (arrow >= 0) {
    const p = parseTerm(equation, eq.slice(arrow + 2), 'the output');
    if (ellipsisDims > 0 && p.ellipsisAt < 0 && parsed.some((q) => q.ellipsisAt >= 0))
      throw fail(equation, "the output must keep '...' when an input has broadcast dims");
    out = p.ellipsisAt < 0 ? p.letters : [...p.letters.slice(0, p.ellipsisAt), ...ellipsisLabels, ...p.letters.slice(p.ellipsisAt)];
    const all = new Set(terms.flatMap((t) => t.labels));
    for (const l of p.letters) if (!all.has(l)) throw fail(equation, `output label '${l}' appears in no input`);
    if (new Set(p.letters).size !== p.letters.length) throw fail(equation, 'the output repeats a label');
  } else {
    const count = new Map<string, number>();
    for (const p of parsed) for (const l of p.letters) count.set(l, (count.get(l) ?? 0) + 1);
    out = [...ellipsisLabels, ...[...count.keys()].filter((l) => count.get(l) === 1).sort()];
  }

  terms = terms.map((t, i) => diagonals(equation, t, i));
  const needed = (from: number) => new Set([...out, ...terms.slice(from).flatMap((t) => t.labels)]);
  let acc = sumOut(terms[0], new Set([...needed(1)]));
  for (let i = 1; i < terms.length; i++) {
    const keep = needed(i + 1);
    const next = sumOut(terms[i], new Set([...keep, ...acc.labels]));
    acc = contract(sumOut(acc, new Set([...keep, ...next.labels])), next, keep);
  }
  acc = sumOut(acc, new Set(out));
  return permute(
    acc.t,
    out.map((l) => acc.labels.indexOf(l)),
  );
}
