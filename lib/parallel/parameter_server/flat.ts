/**
 * Moving a shard's tensors as one flat run of bytes. They are read tensor by tensor and written to
 * the socket as they are (one writev). What arrives is received into one buffer and, for a shard
 * whose tensors share one dtype and device (the usual case), becomes one tensor made straight from
 * those bytes, each parameter's part a view of it: two copies between the socket and the tensors
 * instead of four. A shard that mixes dtypes or devices becomes one tensor per parameter.
 */
import type { Tensor } from '../../tensor';
import { tensor } from '../../ops/creation';
import { narrow, reshape } from '../../ops/shape';
import { noGrad } from '../../dispatch/grad_mode';
import type { ParamSpec } from './shard';

/** The bytes of a typed array, without copying. */
function bytesOf(a: Float32Array | Float64Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/** `bytes` as a typed array of `dtype`: a view when aligned, else an aligned copy. */
export function typedOf(dtype: 'f32' | 'f64', bytes: Buffer): Float32Array | Float64Array {
  const size = dtype === 'f64' ? 8 : 4;
  const Ctor = dtype === 'f64' ? Float64Array : Float32Array;
  if (bytes.byteOffset % size === 0) return new Ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.length / size);
  const copy = new ArrayBuffer(bytes.length);
  new Uint8Array(copy).set(bytes);
  return new Ctor(copy);
}

/**
 * The values of `tensors`, end to end (each flattened), as one buffer per tensor for a writev: a
 * native read per tensor, no joining copy. The reads are queued now, so the tensors may change as
 * soon as this returns.
 */
export function readFlat(tensors: readonly Tensor[]): Promise<Buffer[]> {
  return Promise.all(tensors.map((t) => t.data())).then((vs) => vs.map((v) => bytesOf(v as Float32Array | Float64Array)));
}

/**
 * Tensors holding `bytes`: for each spec whose `present` entry is true, one tensor of its shape and
 * dtype on `devices[i]` (null for the others). With one dtype and device they are views of a single
 * tensor made from the bytes; the caller disposes them.
 */
export function tensorsOf(
  specs: readonly ParamSpec[],
  present: readonly boolean[],
  bytes: Buffer,
  devices: readonly string[],
): Array<Tensor | null> {
  const on = specs.flatMap((_, i) => (present[i] ? [i] : []));
  const one = on.every((i) => specs[i].dtype === specs[on[0]].dtype && devices[i] === devices[on[0]]);
  return noGrad(() => {
    const out: Array<Tensor | null> = specs.map(() => null);
    if (on.length > 1 && one) {
      const dtype = specs[on[0]].dtype;
      const size = dtype === 'f64' ? 8 : 4;
      const flat = tensor(typedOf(dtype, bytes), { dtype, device: devices[on[0]] });
      let at = 0;
      for (const i of on) {
        const n = specs[i].bytes / size;
        const part = narrow(flat, 0, at, n);
        out[i] = reshape(part, specs[i].shape);
        part.dispose();
        at += n;
      }
      flat.dispose();
      return out;
    }
    let at = 0;
    for (const i of on) {
      const s = specs[i];
      out[i] = tensor(typedOf(s.dtype, bytes.subarray(at, at + s.bytes)), { shape: s.shape, dtype: s.dtype, device: devices[i] });
      at += s.bytes;
    }
    return out;
  });
}
