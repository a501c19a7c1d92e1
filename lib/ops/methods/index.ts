/**
 * The op methods of Tensor (`t.add(u)`, `t.sum()`, ...), installed on its prototype by the files
 * here, as tfjs installs its chained ops: one file per group of ops, each typing its methods by
 * declaration merging. lib/tensor.ts imports no op, so the ops may import Tensor without a runtime
 * cycle; lib/index.ts imports this module before anything else can run an op.
 */
// defines: add, sub, ..., to, clone, copy_, isclose
import './elementwise';
// defines: sum, mean, max, ..., norm, softmax
import './reduce';
// defines: matmul, addmm, baddbmm
import './linalg';
// defines: reshape, view, permute, T, narrow, split, ...
import './shape';
// defines: tril, triu, flip, roll, repeat, tile, unbind
import './rearrange';
// defines: add_, sub_, ..., fill_, zero_, uniform_, normal_
import './inplace';
// defines: index, setIndex, indexPut_, gather, scatter, maskedSelect, nonzero, ...
import './indexing';
// defines: cumsum, cumprod
import './scan';
// defines: sort, argsort, topk, multinomial
import './sort';
// defines: the methods of ops generated from the manifest (exp, eq, hypot, ...)
import '../generated/methods';
