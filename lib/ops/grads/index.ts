/**
 * Loads the gradient tables of the hand-written op families: lib/ops/<family>.ts records through
 * gradOf, and its table (lib/ops/grads/<family>.ts) imports the family's ops, so the family cannot
 * import its table without an import cycle. lib/index.ts imports this file, as it imports
 * lib/ops/generated/grads.ts for the generated families.
 */
// defines: addmm, baddbmm
import './blas';
// defines: add, sub, mul, div, pow, maximum, minimum, clamp, lerp, where, to, clone
import './elementwise';
// defines: indexSelect, gather, scatterAdd, indexAdd
import './indexing';
// defines: norm
import './norms';
// defines: flip, roll
import './rearrange';
// defines: sum, mean, max, min, prod, var, std, logsumexp, softmax, logSoftmax
import './reduce';
// defines: cumsum, cumprod
import './scan';
// defines: scatter, scatterReduce
import './scatter';
// defines: maskedSelect
import './select';
// defines: reshape, expand, permute, narrow, cat
import './shape';
// defines: sort, topk
import './sort';
