/**
 * Fail-stop in one process (README "Execution"): DataParallel replicas on virtual CPU devices with
 * in-process groups. A step whose loss fails (or whose replica's allocation fails mid-backward)
 * rejects, no replica applies it, and the next step trains as if the bad batch were skipped.
 */
import { localGroups, maxParamDiff } from './devices';
import { values } from '../helpers/values';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native } from '../../lib/native';

const F = fl.nn.functional;
const IN = 128,
  HIDDEN = 256,
  CLASSES = 10,
  BATCH = 256;

function mlp(): fl.nn.Sequential {
  fl.manualSeed(5);
  return new fl.nn.Sequential(new fl.nn.Linear(IN, HIDDEN), new fl.nn.ReLU(), new fl.nn.Linear(HIDDEN, CLASSES));
}

function batch(k: number): [fl.Tensor, fl.Tensor] {
  fl.manualSeed(50 + k);
  return [fl.randn([BATCH, IN]), fl.randint(0, CLASSES, [BATCH], { dtype: 'i64' })];
}

const snapshot = (m: fl.nn.Module) => m.parameters().map((p) => values(p).join(','));

for (const [what, n, failing] of [
  ['an out-of-range target', 2, 'index'],
  ['an allocation failing in backward on one replica', 4, 'oom'],
] as const) {
  test(`DataParallel x${n}, ${what}: the step rejects on every replica, none applies it, training goes on`, async () => {
    const devices = Array.from({ length: n }, (_, i) => `cpu:${i}`);
    const single = mlp();
    const opt1 = new fl.optim.SGD(single.parameters(), { lr: 0.1, momentum: 0.9 });
    for (const k of [0, 2]) {
      const [x, y] = batch(k);
      F.crossEntropy(single.forward(x) as fl.Tensor, y).backward();
      opt1.step();
      opt1.zeroGrad();
    }

    const dp = await fl.parallel.DataParallel.create(mlp(), { devices, groups: await localGroups(devices), bucketCapMB: 0.05 });
    const opt = dp.optimizer(fl.optim.SGD, { lr: 0.1, momentum: 0.9 });
    const run = async (x: fl.Tensor, y: fl.Tensor, inject = false) => {
      const loss = F.crossEntropy(dp.forward(x), y.to(dp.outputDevice));
      if (inject) native.failAllocAfter(2);
      loss.backward();
      await dp.step();
      opt.zeroGrad();
      return loss.item();
    };
    const [x0, y0] = batch(0);
    await run(x0, y0);
    const before = dp.replicas.map(snapshot);

    const [x1, y1] = batch(1);
    const bad = failing === 'index' ? fl.cat([y1.narrow(0, 0, BATCH - 1), fl.tensor([CLASSES], { dtype: 'i64' })]) : y1;
    let err: (Error & { code?: string }) | null = null;
    try {
      await run(x1, bad, failing === 'oom');
    } catch (e) {
      err = e as Error & { code?: string };
      opt.zeroGrad();
    }
    native.failAllocAfter(-1);
    assert.ok(err, 'the failed step resolved');
    assert.ok(['ERR_INDEX', 'ERR_OOM', 'ERR_PEER_FAILED'].includes(err.code ?? ''), `${err.code}: ${err.message}`);
    assert.equal(dp.replicas.map(snapshot), before, 'a replica applied the failed step');

    const [x2, y2] = batch(2);
    await run(x2, y2);
    assert.ok(maxParamDiff(dp.replicas[0].parameters(), single.parameters()) < 1e-5);
    for (const r of dp.replicas.slice(1)) assert.equal(snapshot(r), snapshot(dp.replicas[0]));
  });
}

test('in-process group: a collective posted by a failed device fails on every device with ERR_PEER_FAILED and changes nothing', async () => {
  const devices = ['cpu:0', 'cpu:1', 'cpu:2'];
  const groups = await localGroups(devices);
  const ts = devices.map((d, i) => fl.full([4096], i + 1, { device: d }));
  // cpu:1's input comes from a loss that fails on its stream.
  const logits = fl.randn([BATCH * 4, 64], { device: 'cpu:1' }).matmul(fl.randn([64, CLASSES], { device: 'cpu:1' }));
  const broken = F.crossEntropy(logits, fl.full([BATCH * 4], CLASSES, { dtype: 'i64', device: 'cpu:1' }), { reduction: 'none' });
  const input = [ts[0], broken.sum().expand([4096]).contiguous(), ts[2]];
  const works = groups.map((g, i) => g.allReduce(input[i]));
  const errs = await Promise.all(
    works.map((w) =>
      w.wait().then(
        () => null,
        (e: Error & { code?: string }) => e,
      ),
    ),
  );
  assert.is(errs[1]?.code, 'ERR_INDEX', errs[1]?.message);
  for (const i of [0, 2]) {
    assert.is(errs[i]?.code, 'ERR_PEER_FAILED', errs[i]?.message);
    assert.match(errs[i]!.message, /cpu:1 failed earlier/);
  }
  // Nothing was reduced into the healthy devices' tensors.
  assert.equal(values(ts[0]).slice(0, 3), [1, 1, 1]);
  assert.equal(values(ts[2]).slice(0, 3), [3, 3, 3]);
  // The clique is still in step: the next collective reduces.
  const again = devices.map((d) => fl.ones([8], { device: d }));
  await Promise.all(groups.map((g, i) => g.allReduce(again[i]).wait()));
  assert.equal(values(again[2]), Array(8).fill(3));
});

test.run();
