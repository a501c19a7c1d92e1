/**
 * Gradient buckets for data parallelism: parameters in reverse registration order (roughly the
 * order backward finishes their gradients), grouped by dtype up to a byte cap, so one allreduce
 * per bucket can start while the rest of backward still runs.
 *
 * {@link BucketReducer} is the state machine both DistributedDataParallel (one replica per process)
 * and DataParallel (one replica per device of this process) drive from their gradient hooks: local
 * gradients arrive one parameter at a time, a full bucket is flattened and handed to `launch` (an
 * allreduce), strictly in bucket order, and once every launch has finished the reduced values are
 * written back into `.grad`.
 */
import type { Tensor } from '../tensor';
import { keep, tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { cat } from '../ops/shape';
import { zerosLike } from '../ops/creation';
import { type Work, waitAll } from '../distributed/work';

const bytesOf: Record<string, number> = { f32: 4, f64: 8, i32: 4, i64: 8, bf16: 2, f16: 2, u8: 1, bool: 1 };

/** Bytes of `t`'s elements. */
export function byteSize(t: Tensor): number {
  return t.numel() * (bytesOf[t.dtype] ?? 4);
}

export interface Bucket {
  params: Tensor[];
  /** Element offset of each parameter inside the bucket's flat buffer. */
  offsets: number[];
  numel: number;
  dtype: string;
}

function makeBuckets(params: Tensor[], capBytes: number): Bucket[] {
  const buckets: Bucket[] = [];
  let cur: Bucket | null = null;
  let curBytes = 0;
  for (const p of [...params].reverse()) {
    const bytes = byteSize(p);
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

/** What a bucket's launch returns: the collective, and the compressed copy it reduces (if any). */
export interface Launched {
  work: Work;
  /** Reduced in place of the flat buffer (a 16-bit copy); cast back into it by {@link BucketReducer.writeBack}. */
  wire?: Tensor | null;
}

interface BucketState {
  bucket: Bucket;
  grads: (Tensor | null)[];
  arrived: number;
  flat: Tensor | null;
  work: Work | null;
  wire: Tensor | null;
}

/**
 * The full local gradient of `p`, flat: what earlier unsynchronised steps accumulated in `.grad`
 * plus `g` (the engine adds `g` into .grad only after the hooks); zeros for a parameter that took
 * no part (`g` null).
 */
export function localGrad(p: Tensor, g: Tensor | null): Tensor {
  const acc = p.grad && !p.grad.isDisposed ? p.grad : null;
  if (g) return acc ? acc.add(g).reshape([-1]) : g.reshape([-1]).clone();
  return acc ? acc.reshape([-1]).clone() : zerosLike(p).reshape([-1]);
}

export class BucketReducer {
  readonly #states: BucketState[];
  readonly #index = new Map<Tensor, [BucketState, number]>();
  readonly #launch: (flat: Tensor, bucket: number) => Launched;
  /** The next bucket to launch: buckets go out in order, so every peer issues the same sequence. */
  #next = 0;

  constructor(params: Tensor[], capBytes: number, launch: (flat: Tensor, bucket: number) => Launched) {
    this.#launch = launch;
    this.#states = makeBuckets(params, capBytes).map((bucket) => ({
      bucket,
      grads: bucket.params.map(() => null),
      arrived: 0,
      flat: null,
      work: null,
      wire: null,
    }));
    for (const s of this.#states) s.bucket.params.forEach((p, i) => this.#index.set(p, [s, i]));
  }

  get buckets(): readonly Bucket[] {
    return this.#states.map((s) => s.bucket);
  }

  /** Buckets whose collective has been launched since the last reset. */
  get inFlight(): number {
    return this.#states.filter((s) => s.work !== null).length;
  }

  /** Whether `p`'s gradient has arrived since the last reset. */
  has(p: Tensor): boolean {
    const [s, i] = this.#index.get(p)!;
    return s.grads[i] !== null || s.flat !== null;
  }

  /** Parameters whose gradient has not arrived since the last reset. */
  missing(): Tensor[] {
    return [...this.#index.keys()].filter((p) => !this.has(p));
  }

  /** Records `p`'s flat local gradient (kept); launches every bucket that is now complete, in order. */
  arrive(p: Tensor, grad: Tensor): void {
    const [s, i] = this.#index.get(p)!;
    s.grads[i] = keep(grad);
    if (++s.arrived < s.grads.length) return;
    s.flat = keep(cat(s.grads as Tensor[], 0));
    for (const t of s.grads) t!.dispose();
    s.grads = s.grads.map(() => null);
    // Only in bucket order: were a later bucket to go first on one peer (its gradients happened to
    // be ready sooner there), the peers would pair up different buckets.
    for (; this.#next < this.#states.length && this.#states[this.#next].flat; this.#next++) {
      const ready = this.#states[this.#next];
      const { work, wire } = this.#launch(ready.flat!, this.#next);
      ready.work = work;
      ready.wire = wire ?? null;
    }
  }

  /** Waits for every bucket's collective; resolves with the latest completion time (epoch ms, when known). */
  async wait(): Promise<number> {
    await waitAll(this.#states.map((s) => s.work!));
    return Math.max(...this.#states.map((s) => s.work!.completedAt ?? Date.now()));
  }

  /** Writes each bucket's reduced values into its parameters' `.grad` (after {@link wait}). */
  writeBack(): void {
    noGrad(() => {
      for (const s of this.#states) {
        if (s.wire) {
          const back = keep(tidy(() => s.wire!.to(s.flat!.dtype)));
          s.flat!.dispose();
          s.flat = back;
        }
        s.bucket.params.forEach((p, i) => {
          const avg = tidy(() =>
            s
              .flat!.narrow(0, s.bucket.offsets[i], p.numel())
              .reshape([...p.shape])
              .clone(),
          );
          p.grad?.dispose();
          p.grad = keep(avg);
        });
      }
    });
  }

  reset(): void {
    for (const s of this.#states) {
      for (const t of s.grads) t?.dispose();
      s.grads = s.grads.map(() => null);
      s.flat?.dispose();
      s.flat = null;
      s.wire?.dispose();
      s.wire = null;
      s.work = null;
      s.arrived = 0;
    }
    this.#next = 0;
  }
}
