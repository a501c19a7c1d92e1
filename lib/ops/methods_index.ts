/**
 * The Tensor methods of PyTorch-style indexing (`t.index(0, null, [1, 3])` for `t[0, :, 1:3]`,
 * `t.setIndex(...)`, `t.indexPut_(...)`), installed as lib/ops/methods.ts installs the others;
 * lib/index.ts imports this module next to that one.
 */
import type { Tensor } from '../tensor';
import { install } from './methods';
import * as im from './index_method';
import * as ip from './index_put';

declare module '../tensor' {
  interface Tensor {
    /**
     * PyTorch's `t[...]`: `t.index(0, null, [1, 3], idx)` is `t[0, :, 1:3, idx]`. Entries: an
     * integer, null (`:`), `[start, stop]` or `[start, stop, step]`, an index or bool mask tensor,
     * '...' (fl.ellipsis), 'newaxis' (fl.newaxis, PyTorch's None); see fl.index.
     */
    index(...entries: im.IndexEntry[]): Tensor;
    /**
     * PyTorch's `t[...] = value` in place: `t.setIndex([0, null, [1, 3]], v)` is `t[0, :, 1:3] = v`
     * (a single non-array entry may stand alone: `t.setIndex(0, v)`); see fl.setIndex.
     */
    setIndex(index: im.IndexEntry | readonly im.IndexEntry[], value: Tensor | number | boolean): this;
    /** torch.Tensor.index_put_: `values` put (or added, `accumulate`) at the index tensors' positions. */
    indexPut_(indices: readonly (Tensor | null)[], values: Tensor | number, options?: ip.IndexPutOptions): this;
    /** torch.Tensor.index_put: {@link indexPut_} on a copy. */
    indexPut(indices: readonly (Tensor | null)[], values: Tensor | number, options?: ip.IndexPutOptions): Tensor;
  }
}

install({
  index(...entries: im.IndexEntry[]) {
    return im.index(this, ...entries);
  },
  setIndex(index: im.IndexEntry | readonly im.IndexEntry[], value: Tensor | number | boolean) {
    return ip.setIndex(this, index, value);
  },
  indexPut_(indices: readonly (Tensor | null)[], values: Tensor | number, options?: ip.IndexPutOptions) {
    return ip.indexPut_(this, indices, values, options);
  },
  indexPut(indices, values, options) {
    return ip.indexPut(this, indices, values, options);
  },
} as Partial<Tensor> & ThisType<Tensor>);
