/**
 * The CUDA runtime and the nccl clique on a GPU: matmul past the old 65535-row-tile grid limit,
 * emptyCache giving the pool's cached memory back, layerNorm's fused parameter gradients against
 * the CPU, and, with two devices and NCCL, a post its peers never match failing with ERR_TIMEOUT
 * naming them, and work queued after a post waiting for the collective. Without a GPU the file
 * says it skipped.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { gpuSuiteRuns } from './gpu_present';
import { maxAbsDiff, values } from '../helpers/values';

const runs = gpuSuiteRuns('cuda runtime and clique');

if (!runs) {
  test('without a GPU: emptyCache("cuda") has nothing to give back and CUDA tensors are refused with ERR_DEVICE', () => {
    assert.is(fl.emptyCache('cuda'), 0);
    try {
      fl.zeros([2], { device: 'cuda' });
      assert.unreachable('a CUDA tensor without a GPU');
    } catch (e) {
      assert.is((e as { code?: string }).code, 'ERR_DEVICE');
    }
  });
}

if (runs) {
  test('matmul with m = 4,194,305 rows (more than 65535 row tiles) matches the CPU', () => {
    fl.manualSeed(1);
    const a = fl.randn([4_194_305, 3]),
      b = fl.randn([3, 2]);
    const gpu = a.to('cuda').matmul(b.to('cuda')).to('cpu');
    assert.ok(maxAbsDiff(values(gpu), values(a.matmul(b))) < 1e-3);
  });

  test('emptyCache on cuda gives the pool its unused memory back', async () => {
    const t = fl.zeros([1 << 26], { device: 'cuda' });
    await t.data();
    t.dispose();
    await fl.sync('cuda');
    const released = fl.emptyCache('cuda');
    assert.ok(released >= 1 << 28, `released ${released} bytes`);
  });

  test('layerNorm on cuda: y, dx, dweight and dbias match the CPU (rows over several chunks)', () => {
    fl.manualSeed(2);
    for (const [rows, d] of [
      [3000, 37],
      [5, 2050],
    ]) {
      const x = fl.randn([rows, d]),
        w = fl.randn([d]),
        b = fl.randn([d]),
        gy = fl.randn([rows, d]);
      const run = (device: string) => {
        // detach(): to('cpu') returns the tensor itself, which must not start requiring grad and
        // make the CUDA run's copies non-leaves.
        const xs = x.to(device).detach().requiresGrad_(),
          ws = w.to(device).detach().requiresGrad_(),
          bs = b.to(device).detach().requiresGrad_();
        const y = fl.nn.functional.layerNorm(xs, [d], ws, bs);
        y.backward(gy.to(device));
        return [y, xs.grad, ws.grad, bs.grad].map((t) => (t as fl.Tensor).to('cpu'));
      };
      const [c, g] = [run('cpu'), run('cuda')];
      c.forEach((t, i) => assert.ok(maxAbsDiff(values(t), values(g[i])) < 1e-3 * Math.sqrt(rows), `output ${i} of [${rows}, ${d}]`));
    }
  });

  if (native.ncclInfo().available && fl.cuda.deviceCount() >= 2) {
    test('a local-group post its peers never match fails with ERR_TIMEOUT naming the device that never posted', async () => {
      const groups = await fl.distributed.initLocalGroups([0, 1], { timeoutMs: 5000 });
      const t = fl.ones([4], { device: 'cuda:0' });
      const e = await groups[0]
        .allReduce(t)
        .wait()
        .then(
          () => null,
          (err: Error & { code?: string }) => err,
        );
      assert.ok(e, 'the lone post must fail');
      assert.is(e.code, 'ERR_TIMEOUT');
      assert.match(e.message, /cuda:1/);
      for (const g of groups) g.destroy();
    });

    test('work queued after a post waits for the collective', async () => {
      const groups = await fl.distributed.initLocalGroups([0, 1], { timeoutMs: 30_000 });
      const a = fl.full([1 << 20], 1, { device: 'cuda:0' }),
        b = fl.full([1 << 20], 2, { device: 'cuda:1' });
      const w0 = groups[0].allReduce(a);
      const after = a.mul(1); // queued on cuda:0 before cuda:1 has posted
      const w1 = groups[1].allReduce(b);
      await Promise.all([w0.wait(), w1.wait()]);
      const v = after.dataSync() as Float32Array;
      assert.ok(v.every((x) => x === 3));
      for (const g of groups) g.destroy();
    });
  }
}

test.run();
