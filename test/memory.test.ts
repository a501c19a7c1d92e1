/** Tensor lifetimes: dispose, tidy, keep, `using`, finalizers, and 10,000 training-like steps. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as fl from '../lib/index';
import { expectError } from './helpers/reference';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const live = () => fl.memory().cpu.tensors;

test('dispose frees at once and makes the tensor unusable', () => {
  const before = fl.memory().cpu;
  const t = fl.zeros([1000]);
  assert.is(live(), before.tensors + 1);
  t.dispose();
  t.dispose(); // idempotent
  assert.is(live(), before.tensors);
  fl.syncSync(); // the queued fill still held the storage; once run, the bytes are back
  assert.is(fl.memory().cpu.bytes, before.bytes);
  assert.ok(t.isDisposed);
  expectError(() => t.add(1), TypeError, 'ERR_DISPOSED');
});

test('dispose while work is queued keeps the storage alive until the work is done', async () => {
  const a = fl.randn([256, 256]);
  const b = a.matmul(a);
  a.dispose();
  const v = await b.data();
  assert.is(v.length, 256 * 256);
});

test('tidy disposes intermediates and keeps what it returns', () => {
  const before = live();
  const kept = fl.tidy(() => {
    const x = fl.ones([10]);
    const y = x.mul(2).add(1);
    return { y, list: [x.sum()] };
  });
  assert.is(live(), before + 2);
  assert.equal(Array.from(kept.y.dataSync(), Number), new Array(10).fill(3));
  kept.y.dispose();
  kept.list[0].dispose();
  assert.is(live(), before);
});

test('keep() survives tidy; errors inside tidy still clean up', () => {
  const before = live();
  let k: fl.Tensor | undefined;
  fl.tidy(() => {
    k = fl.keep(fl.ones([2]));
    fl.ones([3]);
  });
  assert.is(live(), before + 1);
  k!.dispose();
  assert.throws(
    () =>
      fl.tidy(() => {
        fl.ones([4]);
        throw new Error('boom');
      }),
    /boom/,
  );
  assert.is(live(), before);
});

test('using (Symbol.dispose) frees at scope exit', () => {
  const before = live();
  {
    const t = fl.ones([5]);
    t[Symbol.dispose]();
  }
  assert.is(live(), before);
});

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
};

test('the finalizer frees tensors that become unreachable', async () => {
  await settle();
  const before = live();
  (() => {
    for (let i = 0; i < 100; i++) fl.ones([1000]);
  })();
  for (let i = 0; i < 5 && live() > before; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  assert.is(live(), before);
});

// Node-API runs finalizers when the event loop turns, so the loop yields every 100 steps, as a
// loop that awaits its loss for logging does.
test('10,000 training-like steps keep live tensors and RSS flat', async () => {
  fl.manualSeed(3);
  const w1 = fl.randn([32, 64]).mul(0.1).requiresGrad_();
  const w2 = fl.randn([64, 10]).mul(0.1).requiresGrad_();
  const params = [w1, w2];
  const step = () =>
    fl.tidy((): fl.Tensor => {
      const x = fl.randn([16, 32]);
      const target = fl.randint(0, 10, [16]);
      const logits = x.matmul(w1).relu().matmul(w2);
      const loss = logits.logSoftmax(1).gather(1, target.unsqueeze(1)).mean().neg();
      loss.backward();
      fl.noGrad(() => {
        for (const p of params) {
          p.copy_(p.sub(p.grad!.mul(0.01)));
          p.grad!.dispose();
          p.grad = null;
        }
      });
      return loss.detach();
    });
  let tensorsAt1k = 0,
    bytesAt1k = 0;
  const rss: number[] = []; // MiB after steps 1000, 2000, ..., 10000
  for (let i = 1; i <= 10_000; i++) {
    const loss = step();
    if (i % 100 === 0) assert.ok(Number.isFinite(await loss.item()));
    loss.dispose();
    if (i % 1000 === 0) {
      await settle();
      rss.push(process.memoryUsage().rss / 2 ** 20);
      if (i === 1000) {
        tensorsAt1k = live();
        bytesAt1k = fl.memory().cpu.bytes;
      }
    }
  }
  await settle();
  assert.is(live(), tensorsAt1k, 'live tensors');
  assert.is(fl.memory().cpu.bytes, bytesAt1k, 'live bytes');
  // V8 and malloc settle by some tens of MiB early on (JIT code, arenas) and then stay flat; a leak
  // grows steadily. So the second half may grow only a little, the whole run a bounded amount.
  const lateGrowth = rss[9] - rss[4],
    totalGrowth = rss[9] - rss[0];
  if (process.env.FLOCKML_TEST_VERBOSE) console.log(`rss MiB: ${rss.map((r) => r.toFixed(0)).join(' ')}`);
  assert.ok(
    lateGrowth < 32,
    `RSS grew by ${lateGrowth.toFixed(1)} MiB over steps 5,000-10,000 (${rss.map((r) => r.toFixed(0)).join(' ')})`,
  );
  assert.ok(totalGrowth < 96, `RSS grew by ${totalGrowth.toFixed(1)} MiB over steps 1,000-10,000`);
});

test('released large CPU blocks are kept for reuse, counted in memory(), and given back by emptyCache()', async () => {
  fl.emptyCache();
  assert.is(fl.memory().cpu.cachedBytes, 0);
  const t = fl.zeros([1 << 20]); // 4 MiB
  await fl.sync();
  t.dispose();
  await fl.sync();
  assert.ok(fl.memory().cpu.cachedBytes >= 4 << 20, `cached ${fl.memory().cpu.cachedBytes}`);
  const again = fl.ones([1 << 20]); // same size class: served from the cache
  await fl.sync();
  assert.is(fl.memory().cpu.cachedBytes, 0);
  assert.equal(Array.from((await again.data()).slice(0, 3) as Float32Array), [1, 1, 1]);
  again.dispose();
  await fl.sync();
  assert.ok(fl.emptyCache() >= 4 << 20);
  assert.is(fl.memory().cpu.cachedBytes, 0);
  assert.throws(
    () => fl.emptyCache('gpu:7'),
    (e: Error & { code?: string }) => e.code === 'ERR_DEVICE',
  );
});

test('released mid-size CPU blocks (between 4 KiB and 256 KiB) are kept and reused too', async () => {
  // glibc maps such blocks fresh and unmaps them on free, by a threshold that moves: kept here, a
  // step's [128, 784] bf16 cast stops paying page faults some runs and not others.
  fl.emptyCache();
  const sizes = [1100, 16 * 1024, 50 * 1024]; // f32 elements: 4.4 KB, 64 KiB, 200 KiB
  const first = sizes.map((n) => fl.zeros([n]));
  await fl.sync();
  for (const t of first) t.dispose();
  await fl.sync();
  const cached = fl.memory().cpu.cachedBytes;
  assert.ok(cached >= 4 * (1100 + 16 * 1024 + 50 * 1024), `cached ${cached}`);
  const again = sizes.map((n) => fl.ones([n])); // the same classes: served from the cache
  await fl.sync();
  assert.is(fl.memory().cpu.cachedBytes, 0);
  for (const t of again) assert.equal(Array.from((await t.data()).slice(-2) as Float32Array), [1, 1]);
  for (const t of again) t.dispose();
  await fl.sync();
  assert.is(fl.emptyCache(), cached);
});

test('released small CPU blocks are kept per 64-byte class, counted, reused and given back by emptyCache()', async () => {
  fl.emptyCache();
  const first = Array.from({ length: 100 }, () => fl.zeros([16])); // 64 bytes each
  await fl.sync();
  for (const t of first) t.dispose();
  await fl.sync();
  const cached = fl.memory().cpu.cachedBytes;
  assert.ok(cached >= 100 * 64, `cached ${cached}`);
  const again = Array.from({ length: 100 }, () => fl.ones([16])); // the same class: served from the cache
  await fl.sync();
  assert.is(fl.memory().cpu.cachedBytes, cached - 100 * 64);
  for (const t of again) assert.equal(Array.from((await t.data()) as Float32Array), new Array(16).fill(1));
  for (const t of again) t.dispose();
  await fl.sync();
  assert.ok(fl.emptyCache() >= 100 * 64);
  assert.is(fl.memory().cpu.cachedBytes, 0);
});

test.run();
