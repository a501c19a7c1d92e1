/** Shared helpers of the io tests: temporary directories, tensors from raw bytes, byte equality. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native } from '../../lib/native';
import { itemSize } from '../../lib/dtype';

/** A fresh directory under the system temp dir; removed by the returned cleanup. */
export function tempDir(tag: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `flockml-${tag}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Deterministic bytes (a small LCG) valid for `dtype`: bool gets 0/1, everything else any bits. */
export function patternBytes(n: number, dtype: fl.CanonicalDType, seed = 1): Uint8Array {
  const out = new Uint8Array(n * itemSize(dtype));
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = dtype === 'bool' ? s >>> 31 : s >>> 24;
  }
  return out;
}

/** A CPU tensor holding exactly `bytes`. */
export function fromBytes(bytes: Uint8Array, shape: number[], dtype: fl.CanonicalDType, device = 'cpu'): fl.Tensor {
  return new fl.Tensor(native.fromBuffer(bytes, shape, dtype, device));
}

export function bytesOf(t: fl.Tensor): Uint8Array {
  return new Uint8Array(native.readSync(t.handle));
}

/** Same shape, dtype and bytes (NaN payloads included). */
export function sameTensor(a: fl.Tensor, b: fl.Tensor, what = 'tensor'): void {
  assert.equal([...a.shape], [...b.shape], `${what}: shape`);
  assert.is(a.dtype, b.dtype, `${what}: dtype`);
  assert.ok(Buffer.from(bytesOf(a)).equals(Buffer.from(bytesOf(b))), `${what}: bytes differ`);
}
