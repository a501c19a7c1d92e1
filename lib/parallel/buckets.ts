/**
 * Gradient buckets for data parallelism: parameters in reverse registration order (roughly the
 * order backward finishes their gradients), grouped by dtype up to a byte cap, so one allreduce
 * per bucket can start while the rest of backward still runs.
 */
import type { Tensor } from '../tensor';

const bytesOf: Record<string, number> = { f32: 4, f64: 8, i32: 4, i64: 8, bf16: 2, f16: 2, u8: 1, bool: 1 };

export interface Bucket {
  params: Tensor[];
  /** Element offset of each parameter inside the bucket's flat buffer. */
  offsets: number[];
  numel: number;
  dtype: string;
}

export function makeBuckets(params: Tensor[], capBytes: number): Bucket[] {
  const buckets: Bucket[] = [];
  let cur: Bucket | null = null;
  let curBytes = 0;
  for (const p of [...params].reverse()) {
    const bytes = p.numel() * (bytesOf[p.dtype] ?? 4);
    if (!cur || cur.dtype !== p.dtype || (curBytes > 0 && curBytes + bytes > capBytes)) {
      cur = { params: [], offsets: [], numel: 0, dtype: p.dtype };
      curBytes = 0;
      buckets.push(cur);
    }
    cur.params.push(p);
    cur.offsets.push(cur.numel);
    cur.numel += p.numel();
    curBytes += bytes;
  }
  return buckets;
}
