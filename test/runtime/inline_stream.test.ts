/**
 * Small kernels on an idle CPU stream run on the calling thread (CpuStream::enqueue_small): stream
 * order, errors, profiler records, events and fl.ready() stay as they are for queued work. Each
 * test checks with native.streamInlineTasks which path an op took, so none passes on the queued
 * path alone. Values are checked against f64 references computed here.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

fl.setCpuDeviceCount(2); // before any tensor: cpu:1 exists for the two-device test
const inlineCount = () => native.streamInlineTasks('cpu');
const seq = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

/**
 * Resolves once `device`'s stream worker is parked with nothing queued. A sync point does not
 * promise that: the worker reports the sync before it parks. So a tiny probe op runs until one runs
 * inline; from then on nothing wakes the worker until work is queued.
 */
async function idle(device = 'cpu'): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    const before = native.streamInlineTasks(device);
    fl.zeros([1], { device }).dispose();
    if (native.streamInlineTasks(device) > before) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`the ${device} stream never went idle`);
}

/** Keeps the cpu stream's worker busy for tens of milliseconds (a queued 768x768 matmul chain). */
function busy(): fl.Tensor {
  const m = fl.ones([768, 768]).mul(1 / 768);
  return m.matmul(m).matmul(m);
}

test('a tiny op on an idle stream runs on the calling thread, and its result is right', async () => {
  const a = fl.tensor(seq(16, (i) => i));
  const b = fl.tensor(seq(16, (i) => 0.5 * i - 3));
  await idle();
  const before = inlineCount();
  const c = a.add(b).mul(a).relu();
  assert.is(inlineCount() - before, 3);
  close(
    values(c),
    seq(16, (i) => Math.max(0, (i + 0.5 * i - 3) * i)),
    1e-5,
    1e-5,
  );
});

test('big work is queued: a [256,256] matmul, a 65536-element add, tanh on 1024 elements', async () => {
  const m = fl.ones([256, 256]);
  const v = fl.ones([65536]);
  await fl.sync();
  const before = inlineCount();
  const p = m.matmul(m);
  await fl.sync();
  const s = v.add(v);
  await fl.sync();
  const e = v.narrow(0, 0, 1024).tanh(); // a math function per element weighs 64 elements
  await fl.sync();
  assert.is(inlineCount(), before);
  await idle();
  const mid = inlineCount();
  v.narrow(0, 0, 128).tanh().dispose();
  assert.is(inlineCount() - mid, 1, 'tanh on 128 elements is small');
  close(
    values(e),
    seq(1024, () => Math.tanh(1)),
    1e-5,
    1e-5,
  );
  assert.is(p.sum().itemSync(), 256 * 256 * 256);
  assert.is(s.sum().itemSync(), 2 * 65536);
});

test('a tiny op queued behind running work waits for it and sees its result', async () => {
  await fl.sync();
  const big = busy(); // every entry is 1/768 after two multiplications by the averaging matrix
  const before = inlineCount();
  const head = big.narrow(0, 0, 1).reshape([768]).narrow(0, 0, 16); // free views
  const c = head.mul(768).add(1);
  assert.is(inlineCount(), before, 'the worker was busy: the op must be queued');
  close(
    values(c),
    seq(16, () => 2),
    1e-5,
    1e-5,
  );
});

test('an in-place update queued behind a reader does not overtake it', async () => {
  const a = fl.tensor(seq(16, (i) => i));
  await fl.sync();
  busy();
  const wide = a.reshape([16, 1]).mul(fl.ones([1, 4096])); // reads a, queued behind the matmuls
  const before = inlineCount();
  a.add_(100);
  assert.is(inlineCount(), before);
  const rows = wide.sum(1);
  close(
    values(rows),
    seq(16, (i) => 4096 * i),
    1e-5,
    1e-5,
  );
  close(
    values(a),
    seq(16, (i) => i + 100),
    1e-5,
    1e-5,
  );
});

test('queued work after an inline op sees its result', async () => {
  const a = fl.tensor(seq(16, (i) => i - 8));
  await idle();
  const before = inlineCount();
  const b = a.add(a); // inline
  assert.is(inlineCount() - before, 1);
  const wide = b.reshape([16, 1]).mul(fl.ones([1, 8192])); // 131072 elements: queued
  close(
    values(wide.sum(1)),
    seq(16, (i) => 2 * (i - 8) * 8192),
    1e-6,
    1e-6,
  );
});

test('a kernel error from an inline op is reported as a queued one is (fail-stop: at the op reading its result, or the next sync point)', async () => {
  const logits = fl.zeros([4, 3]);
  const target = fl.tensor([0, 5, 1, 2], { dtype: 'i64' });
  await fl.sync();
  const errorOf = async (): Promise<{ code: string; message: string; kind: string }> => {
    try {
      // The kernel runs now (inline) or later: crossEntropy's own reduction throws at once when it
      // already failed, else the sync point rejects.
      const loss = fl.nn.functional.crossEntropy(logits, target);
      await fl.sync();
      loss.dispose();
    } catch (e) {
      const err = e as Error & { code: string };
      const original = /crossEntropy: target \d+ is out of range for \d+ classes/.exec(err.message)?.[0] ?? err.message;
      return { code: err.code, message: original, kind: err.constructor.name };
    }
    throw new Error('the out-of-range target was not reported');
  };
  await idle();
  const before = inlineCount();
  const inline = await errorOf();
  assert.ok(inlineCount() > before, 'the loss kernel should have run inline');
  busy();
  const mid = inlineCount();
  const queued = await errorOf();
  assert.is(inlineCount(), mid, 'behind the matmuls the loss kernel is queued');
  assert.is(inline.code, 'ERR_INDEX');
  assert.equal(inline, queued);
  assert.match(inline.message, /crossEntropy: target 5 is out of range for 3 classes/);
  // The error was acknowledged when it reached this thread: the stream works on.
  await fl.sync();
  assert.is(fl.ones([16]).add(1).sum().itemSync(), 32);
});

test('profiler: inline ops are kernels on the cpu stream, one per call, named by the op', async () => {
  const a = fl.randn([16]);
  let ran = 0;
  const prof = await fl.profiler.profile({}, async () => {
    await idle(); // starting the profiler syncs every device
    const before = inlineCount();
    for (let i = 0; i < 4; i++) a.mul(a).dispose();
    ran = inlineCount() - before;
    return fl.sync();
  });
  assert.is(ran, 4);
  const muls = prof.events().filter((e) => e.ph === 'X' && e.cat === 'kernel' && e.name === 'mul');
  assert.is(muls.length, 4);
  for (const k of muls) assert.ok((k.dur ?? -1) >= 0);
  assert.is(prof.keyAverages().find((r) => r.key === 'mul')?.calls, 4);
});

test('events and fl.ready() around inline ops', async () => {
  const a = fl.tensor(seq(16, (i) => i));
  await idle();
  const before = inlineCount();
  const b = a.add(a);
  assert.is(inlineCount() - before, 1);
  const e = fl.Event.record('cpu');
  await e.synchronize();
  assert.ok(e.query());
  await fl.ready();
  await idle();
  const mid = inlineCount();
  const c = b.add(b);
  assert.is(inlineCount() - mid, 1);
  close(
    values(c),
    seq(16, (i) => 4 * i),
    1e-5,
    1e-5,
  );
});

test('two virtual CPU devices: a tiny op on an idle cpu:1 runs inline while cpu:0 is busy', async () => {
  busy();
  const x = fl.ones([16], { device: 'cpu:1' });
  await idle('cpu:1');
  const before = native.streamInlineTasks('cpu:1');
  const y = x.add(x);
  assert.is(native.streamInlineTasks('cpu:1') - before, 1);
  close(
    values(y),
    seq(16, () => 2),
    1e-5,
    1e-5,
  );
});

test('a worker_thread runs tiny ops inline on its own stream', async () => {
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    const n = require(workerData.addon);
    const a = n.full([16], 'f32', 'cpu', 1.5);
    // Until a probe runs inline: the worker reports a sync before it parks.
    const idle = () => new Promise((done) => {
      const probe = () => {
        const was = n.streamInlineTasks('cpu');
        n.dispose(n.full([1], 'f32', 'cpu', 0));
        if (n.streamInlineTasks('cpu') > was) done();
        else setTimeout(probe, 1);
      };
      probe();
    });
    n.sync('cpu').then(idle).then(() => {
      const before = n.streamInlineTasks('cpu');
      let t = a;
      for (let i = 0; i < 10; i++) t = n.binary('add', t, a);
      const ran = n.streamInlineTasks('cpu') - before;
      n.read(n.reduce('sum', t, [], false)).then((b) => parentPort.postMessage({ ran, sum: new Float32Array(b)[0] }));
    });`;
  const addon = require.resolve('../../build/Release/flockml.node');
  const got = await new Promise<{ ran: number; sum: number }>((resolve, reject) => {
    const w = new Worker(src, { eval: true, workerData: { addon } });
    w.once('message', (m) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
  assert.is(got.ran, 10);
  assert.is(got.sum, 16 * 1.5 * 11);
});

test.run();
