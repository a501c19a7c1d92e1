/**
 * Fail-stop (README "Execution"): a kernel that fails stops the step it belongs to. The work queued
 * behind it is dropped, parameters and optimizer state stay bit-identical to before the step, the
 * error names the op, and the next step trains as if the bad batch had been skipped.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native } from '../../lib/native';
import { caught, rejection } from '../helpers/errors';

fl.setCpuDeviceCount(2);

// Large enough that the loss kernel is queued behind the forward's GEMMs (not run inline), so
// backward and the optimizer step are queued behind the failure before it happens.
const IN = 256,
  HIDDEN = 512,
  CLASSES = 10,
  BATCH = 256;

function model(seed: number, device = 'cpu'): fl.nn.Sequential {
  fl.manualSeed(seed);
  return new fl.nn.Sequential(new fl.nn.Linear(IN, HIDDEN), new fl.nn.ReLU(), new fl.nn.Linear(HIDDEN, CLASSES)).to(device);
}

function batch(k: number, device = 'cpu'): { x: fl.Tensor; y: fl.Tensor } {
  fl.manualSeed(1000 + k);
  const x = fl.randn([BATCH, IN]).to(device);
  const y = fl.randint(0, CLASSES, [BATCH], { dtype: 'i64' }).to(device);
  return { x, y };
}

/** Every byte of the parameters and of the optimizer state, plus its step counts. */
async function snapshot(m: fl.nn.Module, opt: fl.optim.Optimizer<{ lr: number }>): Promise<string[]> {
  const out: string[] = [];
  for (const p of m.parameters()) out.push(Buffer.from((await p.data()).buffer).toString('base64'));
  for (const [, s] of opt.state)
    for (const [k, v] of Object.entries(s))
      out.push(v instanceof fl.Tensor ? `${k}:${Buffer.from((await v.data()).buffer).toString('base64')}` : `${k}=${v}`);
  return out;
}

async function trainStep(m: fl.nn.Sequential, opt: fl.optim.Optimizer<{ lr: number }>, b: { x: fl.Tensor; y: fl.Tensor }): Promise<number> {
  opt.zeroGrad();
  const loss = fl.nn.functional.crossEntropy(m.forward(b.x) as fl.Tensor, b.y);
  loss.backward();
  opt.step();
  return loss.item();
}

/** The error of a step that must fail; fails the test when it does not. */
const failingStep = (run: () => Promise<unknown>) => rejection(run());

for (const [name, make] of [
  ['Adam', (p: Iterable<fl.Tensor>) => new fl.optim.Adam(p, { lr: 1e-3 })],
  ['SGD', (p: Iterable<fl.Tensor>) => new fl.optim.SGD(p, { lr: 0.05, momentum: 0.9 })],
] as const) {
  test(`${name}: an out-of-range target drops the step; the next step trains as if the bad batch were skipped`, async () => {
    // Reference: batches 0 and 2. Under test: 0, a bad batch, 2 (the first step's moments exist, the
    // failed step must not count or change them).
    const ref = model(1);
    const refOpt = make(ref.parameters());
    await trainStep(ref, refOpt, batch(0));
    const refLoss = await trainStep(ref, refOpt, batch(2));
    const want = await snapshot(ref, refOpt);

    const m = model(1);
    const opt = make(m.parameters());
    await trainStep(m, opt, batch(0));
    const before = await snapshot(m, opt);
    const bad = batch(1);
    const y = fl.cat([bad.y.narrow(0, 0, BATCH - 1), fl.tensor([CLASSES + 3], { dtype: 'i64' })]);
    const err = await failingStep(() => trainStep(m, opt, { x: bad.x, y }));
    assert.is(err.code, 'ERR_INDEX');
    assert.match(err.message, /crossEntropy/);
    assert.match(err.message, new RegExp(`${CLASSES + 3}`));
    assert.equal(await snapshot(m, opt), before, 'parameters or optimizer state changed by the failed step');
    const loss = await trainStep(m, opt, batch(2));
    assert.is(loss, refLoss);
    assert.equal(await snapshot(m, opt), want, 'the step after the failure differs from skipping the bad batch');
  });
}

test("a failure on the optimizer's first step leaves no state behind (moments made by the dropped step are forgotten)", async () => {
  const ref = model(2);
  const refOpt = new fl.optim.Adam(ref.parameters(), { lr: 1e-3 });
  await trainStep(ref, refOpt, batch(5));
  const want = await snapshot(ref, refOpt);

  const m = model(2);
  const opt = new fl.optim.Adam(m.parameters(), { lr: 1e-3 });
  const before = await snapshot(m, opt);
  const bad = batch(4);
  const err = await failingStep(() => trainStep(m, opt, { x: bad.x, y: bad.y.add(CLASSES) }));
  assert.is(err.code, 'ERR_INDEX');
  assert.equal(await snapshot(m, opt), before);
  assert.is(opt.state.size, 0, 'state created by the dropped step');
  assert.is(Object.keys(opt.stateDict().state).length, 0);
  await trainStep(m, opt, batch(5));
  assert.equal(await snapshot(m, opt), want);
});

test('an allocation that fails while its kernel runs (ERR_OOM, injected) drops the rest of the step', async () => {
  const ref = model(3);
  const refOpt = new fl.optim.Adam(ref.parameters(), { lr: 1e-3 });
  await trainStep(ref, refOpt, batch(7));
  await trainStep(ref, refOpt, batch(8));
  const want = await snapshot(ref, refOpt);

  const m = model(3);
  const opt = new fl.optim.Adam(m.parameters(), { lr: 1e-3 });
  await trainStep(m, opt, batch(7));
  const before = await snapshot(m, opt);
  const b = batch(6);
  await fl.sync();
  // The 4th storage taken from now, in backward's first kernels, fails as it runs: on the stream,
  // after backward and the step were queued (so they are dropped, not refused).
  let queued = false;
  const err = await failingStep(async () => {
    opt.zeroGrad();
    const loss = fl.nn.functional.crossEntropy(m.forward(b.x) as fl.Tensor, b.y);
    native.failAllocAfter(3);
    loss.backward();
    opt.step();
    queued = true;
    return loss.item();
  });
  native.failAllocAfter(-1);
  assert.ok(queued, 'the failure was expected while the step was queued');
  assert.is(err.code, 'ERR_OOM');
  assert.match(err.message, /injected/);
  assert.equal(await snapshot(m, opt), before);
  await trainStep(m, opt, batch(8));
  assert.equal(await snapshot(m, opt), want);
});

test('every sync point rejects with the original error, and an op reading a failed tensor throws at once', async () => {
  const failed = async (t: fl.Tensor) => {
    while (!native.tensorFailure(t.handle)) await new Promise((r) => setTimeout(r, 1));
  };
  for (const sync of [
    (t: fl.Tensor) => t.data(),
    (t: fl.Tensor) => t.item(),
    () => fl.sync(),
    // ready() only waits for room in the queue: it rejects once the failure has happened.
    async (t: fl.Tensor) => {
      await failed(t);
      return fl.ready();
    },
  ]) {
    const logits = fl.randn([BATCH * 4, 64]).matmul(fl.randn([64, CLASSES]));
    const loss = fl.nn.functional.crossEntropy(logits, fl.full([BATCH * 4], CLASSES, { dtype: 'i64' }));
    const queued = loss.mul(2); // queued behind the failure: dropped, and marked
    const e = await failingStep(() => sync(queued) as Promise<unknown>);
    assert.is(e.code, 'ERR_INDEX', String(sync));
    // Now known: reading either throws synchronously with the original code and op.
    for (const t of [loss, queued]) {
      const r = caught(() => t.add(1));
      assert.is(r.code, 'ERR_INDEX');
      assert.match(r.message, /crossEntropy failed earlier: ERR_INDEX/);
    }
    assert.equal(native.tensorFailure(queued.handle)?.code, 'ERR_INDEX');
    // The stream works on once the error was delivered.
    assert.is(fl.ones([8]).sum().itemSync(), 8);
  }
});

test('a copy to another device from a failed tensor fails there too, and that stream drops what follows', async () => {
  const logits = fl.randn([BATCH * 4, 64]).matmul(fl.randn([64, CLASSES]));
  const loss = fl.nn.functional.crossEntropy(logits, fl.full([BATCH * 4], -1, { dtype: 'i64' }), { reduction: 'none' });
  const there = loss.to('cpu:1'); // queued on cpu:0 behind the failure; cpu:1 waits for it
  const after = there.mul(3);
  const e = await failingStep(() => after.data());
  assert.is(e.code, 'ERR_INDEX');
  assert.ok(native.tensorFailure(there.handle));
  await fl.sync('cpu:0').catch(() => {}); // cpu:0 may already have been told through cpu:1's event
  assert.is(fl.ones([4], { device: 'cpu:1' }).sum().itemSync(), 4);
  assert.is(fl.ones([4]).sum().itemSync(), 4);
});

test('a second sync point queued before the error was delivered rejects too; one queued after resolves', async () => {
  const logits = fl.randn([BATCH * 4, 64]).matmul(fl.randn([64, CLASSES]));
  const loss = fl.nn.functional.crossEntropy(logits, fl.full([BATCH * 4], 99, { dtype: 'i64' }));
  const read = failingStep(() => loss.mul(1).data()); // its copy is dropped: it must never resolve with garbage
  const first = failingStep(() => fl.sync());
  const e1 = await first;
  const e2 = await read;
  assert.is(e1.code, 'ERR_INDEX');
  assert.is(e2.code, 'ERR_INDEX');
  await fl.sync();
});

test('fill_ over a whole failed tensor makes it good again (zeroGrad(false) after a failed step); a partial write does not', async () => {
  const logits = fl.randn([BATCH * 4, 64]).matmul(fl.randn([64, CLASSES]));
  const bad = fl.nn.functional.crossEntropy(logits, fl.full([BATCH * 4], 42, { dtype: 'i64' }), { reduction: 'none' });
  await failingStep(() => fl.sync());
  assert.is(caught(() => bad.narrow(0, 0, 4).fill_(1)).code, 'ERR_INDEX');
  bad.fill_(2);
  assert.is(await bad.sum().item(), 2 * BATCH * 4);
});

test.run();
