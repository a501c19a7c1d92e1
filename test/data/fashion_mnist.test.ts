import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import * as fl from '../../lib';

const dir = process.env.FLOCKML_FASHION_MNIST_DIR ?? fl.datasets.FASHION_MNIST_DEFAULT_DIR;
const installed = existsSync(`${dir}/t10k-images-idx3-ubyte.gz`);

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

test('the test split loads as [N,1,28,28] f32 in [0,1] and i64 labels', () => {
  if (!installed) return;  // the package is not installed here; the error path is tested above
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

test.run();
