/**
 * Fashion-MNIST from the IDX files (gzip) installed by the Debian package dataset-fashion-mnist:
 * images as f32 [N, 1, 28, 28] scaled to [0, 1], labels as i64 [N].
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { tensor } from '../../ops/creation';
import { TensorDataset } from '../dataset';
import { argError, checkOptions, describe, flockError, outOfRange } from '../../errors';

export const FASHION_MNIST_DEFAULT_DIR = '/usr/share/datasets/fashion-mnist';
export const FASHION_MNIST_CLASSES = [
  'T-shirt/top',
  'Trouser',
  'Pullover',
  'Dress',
  'Coat',
  'Sandal',
  'Shirt',
  'Sneaker',
  'Bag',
  'Ankle boot',
];

export interface FashionMNISTOptions {
  split?: 'train' | 'test';
  /** Folder with the four .gz files; default $FLOCKML_FASHION_MNIST_DIR or the Debian location. */
  dir?: string;
  /** Keep only the first `limit` samples. */
  limit?: number;
}

const OP = 'fashionMNIST';

function readGz(path: string): Buffer {
  let packed: Buffer;
  try {
    packed = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw flockError(code === 'ENOENT' ? 'ERR_NOT_FOUND' : 'ERR_IO', OP, `cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return gunzipSync(packed);
  } catch (e) {
    throw flockError('ERR_DATA', OP, `${path} is not a valid gzip file (truncated or corrupt): ${(e as Error).message}`);
  }
}

/** An IDX file of unsigned bytes: the header's magic and dims, and exactly as many bytes as they say. */
function readIdx(path: string, magic: number): { dims: number[]; data: Uint8Array } {
  const raw = readGz(path);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (raw.byteLength < 4) throw flockError('ERR_DATA', OP, `${path} is truncated: ${raw.byteLength} bytes, shorter than an IDX header`);
  if (view.getUint32(0) !== magic)
    throw flockError(
      'ERR_DATA',
      OP,
      `${path} is not an IDX file of this kind (magic 0x${view.getUint32(0).toString(16).padStart(8, '0')}, expected 0x${magic.toString(16).padStart(8, '0')})`,
    );
  const nd = magic & 0xff;
  const headerBytes = 4 + 4 * nd;
  if (raw.byteLength < headerBytes)
    throw flockError('ERR_DATA', OP, `${path} is truncated: its IDX header needs ${headerBytes} bytes, the file has ${raw.byteLength}`);
  const dims = Array.from({ length: nd }, (_, i) => view.getUint32(4 + 4 * i));
  const expected = dims.reduce((a, b) => a * b, 1);
  const actual = raw.byteLength - headerBytes;
  if (actual !== expected)
    throw flockError(
      'ERR_DATA',
      OP,
      `${path} holds ${actual} bytes of data, but its header [${dims.join(', ')}] needs ${expected}${actual < expected ? ' (truncated)' : ''}`,
    );
  return { dims, data: raw.subarray(headerBytes) };
}

export function fashionMNIST(options: FashionMNISTOptions = {}): TensorDataset {
  const o = checkOptions(OP, options, ['split', 'dir', 'limit']);
  const split = o.split ?? 'train';
  if (split !== 'train' && split !== 'test') throw argError(OP, `split must be 'train' or 'test', got ${describe(split)}`);
  if (o.dir !== undefined && typeof o.dir !== 'string') throw argError(OP, `dir must be a string, got ${describe(o.dir)}`);
  if (o.limit !== undefined) {
    if (typeof o.limit !== 'number') throw argError(OP, `limit must be a number, got ${describe(o.limit)}`);
    if (!Number.isInteger(o.limit) || o.limit < 0) throw outOfRange(OP, `limit must be a non-negative integer, got ${o.limit}`);
  }
  const dir = o.dir ?? process.env.FLOCKML_FASHION_MNIST_DIR ?? FASHION_MNIST_DEFAULT_DIR;
  const prefix = split === 'train' ? 'train' : 't10k';
  const imagesPath = join(dir, `${prefix}-images-idx3-ubyte.gz`);
  const labelsPath = join(dir, `${prefix}-labels-idx1-ubyte.gz`);
  for (const p of [imagesPath, labelsPath])
    if (!existsSync(p))
      throw flockError(
        'ERR_NOT_FOUND',
        OP,
        `${p} not found. Install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or pass { dir } / set FLOCKML_FASHION_MNIST_DIR to a folder holding ${prefix}-images-idx3-ubyte.gz and ${prefix}-labels-idx1-ubyte.gz`,
      );
  const images = readIdx(imagesPath, 0x0803);
  const labels = readIdx(labelsPath, 0x0801);
  const [n, h, w] = images.dims;
  if (labels.dims[0] !== n)
    throw flockError('ERR_DATA', OP, `${imagesPath} holds ${n} images but ${labelsPath} holds ${labels.dims[0]} labels`);
  const count = Math.min(n, o.limit ?? n);
  const bad = labels.data.subarray(0, count).findIndex((v) => v >= FASHION_MNIST_CLASSES.length);
  if (bad >= 0) throw flockError('ERR_DATA', OP, `${labelsPath}: label ${labels.data[bad]} at index ${bad} is not a class (0-9)`);
  const pixels = new Float32Array(count * h * w);
  for (let i = 0; i < pixels.length; i++) pixels[i] = images.data[i] / 255;
  const x = tensor(pixels, { shape: [count, 1, h, w] });
  const y32 = tensor(Int32Array.from(labels.data.subarray(0, count)));
  const y = y32.to('i64');
  y32.dispose(); // the queued cast holds its own reference
  return new TensorDataset(x, y);
}
