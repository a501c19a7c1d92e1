/**
 * Fashion-MNIST from the IDX files (gzip) installed by the Debian package dataset-fashion-mnist:
 * images as f32 [N, 1, 28, 28] scaled to [0, 1], labels as i64 [N].
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { tensor } from '../../ops/creation';
import { TensorDataset } from '../dataset';

export const FASHION_MNIST_DEFAULT_DIR = '/usr/share/datasets/fashion-mnist';
export const FASHION_MNIST_CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];

export interface FashionMNISTOptions {
  split?: 'train' | 'test';
  /** Folder with the four .gz files; default $FLOCKML_FASHION_MNIST_DIR or the Debian location. */
  dir?: string;
  /** Keep only the first `limit` samples. */
  limit?: number;
}

function readIdx(path: string, magic: number): { dims: number[]; data: Uint8Array } {
  const raw = gunzipSync(readFileSync(path));
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (view.getUint32(0) !== magic)
    throw Object.assign(new RangeError(`fashionMNIST: ${path} is not an IDX file (magic ${view.getUint32(0).toString(16)})`), { code: 'ERR_DATA' });
  const nd = magic & 0xff;
  const dims = Array.from({ length: nd }, (_, i) => view.getUint32(4 + 4 * i));
  return { dims, data: raw.subarray(4 + 4 * nd) };
}

export function fashionMNIST(options: FashionMNISTOptions = {}): TensorDataset {
  const split = options.split ?? 'train';
  if (split !== 'train' && split !== 'test') throw Object.assign(new TypeError(`fashionMNIST: split must be 'train' or 'test', got ${String(split)}`), { code: 'ERR_ARG' });
  const dir = options.dir ?? process.env.FLOCKML_FASHION_MNIST_DIR ?? FASHION_MNIST_DEFAULT_DIR;
  const prefix = split === 'train' ? 'train' : 't10k';
  const imagesPath = join(dir, `${prefix}-images-idx3-ubyte.gz`);
  const labelsPath = join(dir, `${prefix}-labels-idx1-ubyte.gz`);
  for (const p of [imagesPath, labelsPath])
    if (!existsSync(p))
      throw Object.assign(
        new Error(`fashionMNIST: ${p} not found. Install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or pass { dir } / set FLOCKML_FASHION_MNIST_DIR to a folder holding ${prefix}-images-idx3-ubyte.gz and ${prefix}-labels-idx1-ubyte.gz`),
        { code: 'ERR_NOT_FOUND' },
      );
  const images = readIdx(imagesPath, 0x0803);
  const labels = readIdx(labelsPath, 0x0801);
  const [n, h, w] = images.dims;
  if (labels.dims[0] !== n) throw Object.assign(new RangeError(`fashionMNIST: ${n} images but ${labels.dims[0]} labels`), { code: 'ERR_DATA' });
  const count = Math.min(n, options.limit ?? n);
  const pixels = new Float32Array(count * h * w);
  for (let i = 0; i < pixels.length; i++) pixels[i] = images.data[i] / 255;
  const x = tensor(pixels, { shape: [count, 1, h, w] });
  const y = tensor(Int32Array.from(labels.data.subarray(0, count))).to('i64');
  return new TensorDataset(x, y);
}
