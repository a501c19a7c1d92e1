import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

/** PyTorch's scale update (torch._amp_update_scale_), on the host. */
function reference(steps: boolean[], o: { init: number; growth: number; backoff: number; interval: number }): number[] {
  let scale = o.init,
    tracker = 0;
  const out: number[] = [];
  for (const inf of steps) {
    if (inf) {
      scale *= o.backoff;
      tracker = 0;
    } else if (++tracker === o.interval) {
      scale *= o.growth;
      tracker = 0;
    }
    out.push(scale);
  }
  return out;
}

function setup(dtype: 'f32' | 'f16' = 'f32') {
  const p = new fl.nn.Parameter(fl.ones([4]).to(dtype));
  const opt = new fl.optim.SGD([p], { lr: 0.5 });
  return { p, opt };
}

// Gradients cleared (setToNone) or zeroed in place: zeroing must also clear the inf a skipped step
// left, or every later step sees inf and is skipped.
for (const setToNone of [true, false])
  test(`the scale sequence follows the reference: growth after N clean steps, backoff and a skipped step on inf (zeroGrad(${setToNone}))`, async () => {
    const o = { init: 2 ** 10, growth: 2, backoff: 0.5, interval: 3 };
    const scaler = new fl.amp.GradScaler({
      initScale: o.init,
      growthFactor: o.growth,
      backoffFactor: o.backoff,
      growthInterval: o.interval,
    });
    const pattern = [false, false, false, false, true, false, false, false, true, true, false];
    const want = reference(pattern, o);
    const { p, opt } = setup();
    for (let i = 0; i < pattern.length; i++) {
      opt.zeroGrad(setToNone);
      const before = p.toArray() as number[];
      const x = fl.tensor([1, 2, 3, pattern[i] ? Number.POSITIVE_INFINITY : 4]);
      scaler.scale(p.mul(x).sum()).backward();
      const stepped = await scaler.step(opt);
      assert.is(stepped, !pattern[i], `step ${i} taken`);
      if (pattern[i]) assert.equal(p.toArray(), before, `step ${i} skipped: params unchanged`);
      else {
        // The unscaled gradient is x itself: p ← p − 0.5·x.
        const after = p.toArray() as number[];
        assert.equal(
          after,
          before.map((v, k) => v - 0.5 * [1, 2, 3, 4][k]),
          `step ${i} update`,
        );
      }
      scaler.update();
      assert.is(scaler.getScale(), want[i], `scale after step ${i}`);
    }
  });

test('scaler.step(opt); scaler.update() unawaited, as PyTorch code is written: update() throws ERR_ARG telling to await step()', async () => {
  const scaler = new fl.amp.GradScaler({ initScale: 1024 });
  const { p, opt } = setup();
  scaler.scale(p.mul(fl.tensor([1, 2, 3, Number.POSITIVE_INFINITY])).sum()).backward();
  const pending = scaler.step(opt);
  let err: (Error & { code?: string }) | undefined;
  try {
    scaler.update();
  } catch (e) {
    err = e as Error & { code?: string };
  }
  assert.instance(err, TypeError);
  assert.is(err?.code, 'ERR_ARG');
  assert.match(err?.message ?? '', /await scaler\.step\(optimizer\) before update\(\)/);
  assert.is(await pending, false, 'the step saw the inf and was skipped');
  scaler.update();
  assert.is(scaler.getScale(), 512, 'the backoff the unawaited update would have missed');
});

test('unscale_ then clipGradNorm_ sees the true gradients; gradient accumulation unscales once', async () => {
  const scaler = new fl.amp.GradScaler({ initScale: 1024 });
  const { p, opt } = setup();
  for (let k = 0; k < 3; k++) scaler.scale(p.mul(fl.tensor([3, 0, 0, 4])).sum()).backward();
  scaler.unscale_(opt);
  assert.equal(p.grad?.toArray(), [9, 0, 0, 12]);
  const norm = fl.optim.clipGradNorm_([p], 1);
  assert.ok(Math.abs(norm.itemSync() - 15) < 1e-5);
  assert.throws(
    () => scaler.unscale_(opt),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  assert.ok(await scaler.step(opt));
  scaler.update();
  assert.throws(
    () => scaler.update(),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
});

test('state dict round trip; a disabled scaler is a pass-through', async () => {
  const a = new fl.amp.GradScaler({ initScale: 8, growthInterval: 2 });
  const { p, opt } = setup();
  a.scale(p.sum()).backward();
  await a.step(opt);
  a.update();
  const sd = a.stateDict();
  assert.equal(sd, { scale: 8, growthFactor: 2, backoffFactor: 0.5, growthInterval: 2, growthTracker: 1 });
  const b = new fl.amp.GradScaler();
  b.loadStateDict(sd);
  assert.equal(b.stateDict(), sd);
  assert.throws(
    () => b.loadStateDict({ ...sd, scale: -1 }),
    (e: { code?: string }) => e.code === 'ERR_RANGE',
  );
  assert.throws(
    () => b.loadStateDict({ ...sd, extra: 1 } as never),
    (e: { code?: string }) => e.code === 'ERR_STATE_DICT',
  );
  const off = new fl.amp.GradScaler({ enabled: false });
  const loss = p.sum();
  assert.is(off.scale(loss), loss);
  assert.is(off.getScale(), 1);
  assert.throws(
    () => new fl.amp.GradScaler({ growthFactor: 1 }),
    (e: { code?: string }) => e.code === 'ERR_RANGE',
  );
  assert.throws(
    () => new fl.amp.GradScaler({ initscale: 2 } as never),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
});

test('the fused unscale covers every dtype and flags NaN as well as inf', () => {
  const { native } = require('../../lib/native') as typeof import('../../lib/native');
  const ts = [fl.tensor([2, 4]), fl.tensor([8], { dtype: 'f64' }), fl.tensor([16, 32]).to('bf16'), fl.tensor([64]).to('f16')];
  const flag = fl.zeros([]);
  native.ampUnscale(
    ts.map((t) => t.handle),
    flag.handle,
    0.5,
  );
  assert.equal(
    ts.map((t) => t.to('f64').toArray()),
    [[1, 2], [4], [8, 16], [32]],
  );
  assert.is(flag.itemSync(), 0);
  const bad = fl.tensor([1, Number.NaN]).to('f16');
  native.ampUnscale([bad.handle], flag.handle, 1);
  assert.is(flag.itemSync(), 1);
  assert.throws(
    () => native.ampUnscale([bad.handle], fl.zeros([2]).handle, 1),
    (e: { code?: string }) => e.code === 'ERR_DTYPE',
  );
});

test('f16 gradients that underflow without scaling train with a GradScaler', async () => {
  // f32 weights, f16 activations (autocast f16): dL/dy ≈ 3e-11 flushes to zero in f16 unless the
  // loss is scaled; unscaling then happens on the f32 weight gradient, where it is representable.
  const run = async (scaled: boolean) => {
    const w = new fl.nn.Parameter(fl.zeros([1, 8]));
    const opt = new fl.optim.SGD([w], { lr: 5e5 });
    const scaler = new fl.amp.GradScaler({ enabled: scaled });
    const x = fl.ones([64, 8]);
    const target = fl.full([64, 1], 1e-2);
    const losses: number[] = [];
    for (let s = 0; s < 4; s++) {
      opt.zeroGrad();
      const loss = fl.autocast({ device: 'cpu', dtype: 'f16' }, () =>
        fl.nn.functional.mseLoss(fl.nn.functional.linear(x, w), target).mul(1e-7),
      );
      losses.push(loss.itemSync());
      scaler.scale(loss).backward();
      await scaler.step(opt);
      scaler.update();
    }
    return { w: w.mean().itemSync(), losses };
  };
  const plain = await run(false);
  assert.is(plain.w, 0, 'unscaled: the f16 gradients flush to zero, nothing moves');
  const scaled = await run(true);
  assert.ok(scaled.w > 0, `scaled: the weights move toward the target (${scaled.w})`);
  assert.ok(scaled.losses[3] < scaled.losses[0], `scaled: the loss falls (${scaled.losses})`);
});

test.run();
