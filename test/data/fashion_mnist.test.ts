import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';

const dir = process.env.FLOCKML_FASHION_MNIST_DIR ?? fl.datasets.FASHION_MNIST_DEFAULT_DIR;
const installed = existsSync(`${dir}/t10k-images-idx3-ubyte.gz`);

/** An IDX file: big-endian magic and dims, then `data` (default: as many bytes as the dims say). */
function idx(magic: number, dims: number[], data?: Uint8Array): Buffer {
  const head = Buffer.alloc(4 + 4 * dims.length);
  head.writeUInt32BE(magic, 0);
  dims.forEach((d, i) => head.writeUInt32BE(d, 4 + 4 * i));
  const body = data ?? Uint8Array.from({ length: dims.reduce((a, b) => a * b, 1) }, (_, i) => i % 10);
  return Buffer.concat([head, body]);
}

const tmp = mkdtempSync(join(tmpdir(), 'flockml-fmnist-'));
let case_ = 0;
/** A folder holding the test split's two files, each as given (a Buffer is gzipped unless raw). */
function folder(
  images: Buffer | { raw: Buffer },
  labels: Buffer | { raw: Buffer } = idx(0x0801, [3]),
): { dir: string; images: string; labels: string } {
  const d = join(tmp, String(case_++));
  mkdirSync(d);
  const files = { images: join(d, 't10k-images-idx3-ubyte.gz'), labels: join(d, 't10k-labels-idx1-ubyte.gz') };
  writeFileSync(files.images, 'raw' in images ? images.raw : gzipSync(images));
  writeFileSync(files.labels, 'raw' in labels ? labels.raw : gzipSync(labels));
  return { dir: d, ...files };
}

function caught(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  return assert.unreachable('expected an error') as never;
}

const load =
  (d: string, extra: object = {}) =>
  () =>
    fl.datasets.fashionMNIST({ split: 'test', dir: d, ...extra });

test('a missing folder names the Debian package and the option', () => {
  try {
    fl.datasets.fashionMNIST({ dir: '/nonexistent/fmnist' });
    assert.unreachable();
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_NOT_FOUND');
    assert.match((e as Error).message, /dataset-fashion-mnist/);
    assert.match((e as Error).message, /FLOCKML_FASHION_MNIST_DIR/);
  }
});

test('well-formed small files load, and limit keeps the first samples', () => {
  const f = folder(idx(0x0803, [3, 28, 28]));
  const ds = fl.datasets.fashionMNIST({ split: 'test', dir: f.dir });
  assert.equal([...ds.tensors[0].shape], [3, 1, 28, 28]);
  assert.equal(ds.tensors[1].toArray(), [0, 1, 2]);
  assert.is(fl.datasets.fashionMNIST({ split: 'test', dir: f.dir, limit: 2 }).length, 2);
});

test('image data shorter than the header says is ERR_DATA naming the file and both byte counts, not NaN pixels', () => {
  const f = folder(idx(0x0803, [3, 28, 28], new Uint8Array(100)));
  throwsCode(load(f.dir), 'ERR_DATA');
  const e = caught(load(f.dir));
  assert.ok(e.message.includes(f.images), e.message);
  assert.match(e.message, /2352/);
  assert.match(e.message, /\b100\b/);
});

test('short label data is ERR_DATA too', () => {
  const f = folder(idx(0x0803, [3, 28, 28]), idx(0x0801, [3], new Uint8Array(2)));
  throwsCode(load(f.dir), 'ERR_DATA');
  assert.ok(caught(load(f.dir)).message.includes(f.labels));
});

test('a wrong magic number is ERR_DATA naming the file', () => {
  const f = folder(idx(0x0801, [3, 28, 28]));
  throwsCode(load(f.dir), 'ERR_DATA');
  assert.ok(caught(load(f.dir)).message.includes(f.images));
});

test('a truncated IDX header is ERR_DATA naming the file', () => {
  for (const bytes of [Buffer.from([0, 0]), idx(0x0803, [3, 28, 28]).subarray(0, 10)]) {
    const f = folder(bytes);
    throwsCode(load(f.dir), 'ERR_DATA');
    assert.ok(caught(load(f.dir)).message.includes(f.images));
  }
});

test('a truncated or corrupt .gz is ERR_DATA naming the file, not a raw zlib error', () => {
  const gz = gzipSync(idx(0x0803, [3, 28, 28]));
  const corrupt = Buffer.from(gz);
  corrupt.fill(0xa5, 10, 40);
  for (const raw of [gz.subarray(0, gz.length >> 1), corrupt, Buffer.from('not gzip at all')]) {
    const f = folder({ raw });
    throwsCode(load(f.dir), 'ERR_DATA');
    const e = caught(load(f.dir));
    assert.ok(e.message.includes(f.images), e.message);
    assert.match(e.message, /gzip/);
  }
});

test('an unreadable file is ERR_IO naming the path', () => {
  const f = folder(idx(0x0803, [3, 28, 28]));
  rmSync(f.images);
  mkdirSync(f.images); // exists, but reading it fails (EISDIR)
  throwsCode(load(f.dir), 'ERR_IO');
  assert.ok(caught(load(f.dir)).message.includes(f.images));
});

test('image and label counts must agree; labels must be classes', () => {
  throwsCode(load(folder(idx(0x0803, [3, 28, 28]), idx(0x0801, [4])).dir), 'ERR_DATA');
  throwsCode(load(folder(idx(0x0803, [3, 28, 28]), idx(0x0801, [3], Uint8Array.from([1, 12, 3]))).dir), 'ERR_DATA');
});

test('options are validated: limit, split, dir and unknown keys', () => {
  const d = folder(idx(0x0803, [3, 28, 28])).dir;
  throwsCode(load(d, { limit: -1 }), 'ERR_RANGE');
  assert.match(caught(load(d, { limit: -1 })).message, /limit must be a non-negative integer, got -1/);
  throwsCode(load(d, { limit: 1.5 }), 'ERR_RANGE');
  throwsCode(load(d, { limit: '2' }), 'ERR_ARG');
  throwsCode(() => fl.datasets.fashionMNIST({ split: 'val' as 'test', dir: d }), 'ERR_ARG');
  throwsCode(() => fl.datasets.fashionMNIST({ dir: 3 as unknown as string }), 'ERR_ARG');
  throwsCode(() => fl.datasets.fashionMNIST({ splt: 'test' } as object), 'ERR_ARG');
  assert.match(caught(() => fl.datasets.fashionMNIST({ splt: 'test' } as object)).message, /did you mean 'split'/);
});

test('the test split loads as [N,1,28,28] f32 in [0,1] and i64 labels', () => {
  if (!installed) return; // the package is not installed here; the error path is tested above
  const ds = fl.datasets.fashionMNIST({ split: 'test', limit: 100 });
  const [img, lab] = ds.tensors;
  assert.equal([...img.shape], [100, 1, 28, 28]);
  assert.is(img.dtype, 'f32');
  assert.is(lab.dtype, 'i64');
  const px = img.dataSync() as Float32Array;
  assert.ok(px.every((v) => v >= 0 && v <= 1));
  assert.ok((lab.toArray() as number[]).every((v) => v >= 0 && v < 10));
  assert.is(fl.datasets.fashionMNIST({ split: 'test' }).length, 10000);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));

test.run();
