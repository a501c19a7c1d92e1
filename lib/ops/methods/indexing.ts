/** Indexing: PyTorch's `x[...]` (`t.index(0, null, [1, 3])`), gathers, scatters and masks (`t.gather(1, i)`, `t.scatter(...)`). */
import type { Tensor } from '../../tensor';
import * as im from '../index_method';
import * as ip from '../index_put';
import * as idx from '../indexing';
import * as sc from '../scatter';
import * as sel from '../select';
import { install } from './install';

declare module '../../tensor' {
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
    indexSelect(dim: number, index: Tensor): Tensor;
    gather(dim: number, index: Tensor): Tensor;
    scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor;
    scatter(dim: number, index: Tensor, src: Tensor | number): Tensor;
    scatterReduce(dim: number, index: Tensor, src: Tensor, reduce: sc.ScatterReduce, options?: sc.ScatterReduceOptions): Tensor;
    indexAdd(dim: number, index: Tensor, source: Tensor, options?: { alpha?: number }): Tensor;
    maskedSelect(mask: Tensor): Tensor;
    nonzero(options?: { asTuple?: false }): Tensor;
    nonzero(options: { asTuple: true }): Tensor[];
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
  indexSelect(dim, index) {
    return idx.indexSelect(this, dim, index);
  },
  gather(dim, index) {
    return idx.gather(this, dim, index);
  },
  scatterAdd(dim, index, src) {
    return idx.scatterAdd(this, dim, index, src);
  },
  scatter(dim, index, src) {
    return sc.scatter(this, dim, index, src);
  },
  scatterReduce(dim, index, src, reduce, options) {
    return sc.scatterReduce(this, dim, index, src, reduce, options);
  },
  indexAdd(dim, index, source, options) {
    return idx.indexAdd(this, dim, index, source, options);
  },
  maskedSelect(mask) {
    return sel.maskedSelect(this, mask);
  },
  nonzero(options?: { asTuple?: boolean }) {
    // One body for both overloads: the declaration above types each.
    return sel.nonzero(this, options as { asTuple: true });
  },
} as Partial<Tensor> & ThisType<Tensor>);
