/** Pipeline: GPipe and 1F1B over 2 and 4 stages against one device with gradient accumulation. */
import { deviceSets, maxParamDiff } from './devices';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const { nn } = fl;
const F = fl.nn.functional;
type Stage = fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor };

function stages(p: number): Stage[] {
  fl.manualSeed(13);
  const mid = () => new nn.Sequential(new nn.Linear(16, 16), new nn.Tanh());
  return [new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU()), ...Array.from({ length: p - 2 }, mid), new nn.Linear(16, 4)];
}

function data(steps: number, batch: number): [fl.Tensor, fl.Tensor][] {
  fl.manualSeed(17);
  return Array.from({ length: steps }, () => [fl.randn([batch, 8]), fl.randint(0, 4, [batch])]);
}

/** One device: each micro-batch's loss, weighted by its share of the batch, backward in turn. */
function accumulate(model: Stage, x: fl.Tensor, y: fl.Tensor, m: number): void {
  const size = x.shape[0] / m;
  for (let k = 0; k < m; k++)
    fl.tidy(() =>
      F.crossEntropy(model.forward(x.narrow(0, k * size, size)), y.narrow(0, k * size, size))
        .mul(1 / m)
        .backward(),
    );
}

for (const p of [2, 4]) {
  for (const devices of deviceSets(p, `Pipeline p=${p}`)) {
    for (const schedule of ['gpipe', '1f1b'] as const) {
      test(`${devices.join(',')} ${schedule}: gradients equal one device's accumulated ones; 10 steps match`, async () => {
        const m = 4;
        const batches = data(10, 16);
        const single = new nn.Sequential(...stages(p));
        const pipe = new fl.parallel.Pipeline(stages(p), { devices, microBatches: m, schedule });
        const refOpt = new fl.optim.SGD(single.parameters(), { lr: 0.1, momentum: 0.9 });
        const opt = new fl.optim.SGD(pipe.parameters(), { lr: 0.1, momentum: 0.9 });
        for (const [i, [x, y]] of batches.entries()) {
          accumulate(single, x, y, m);
          const loss = await pipe.step(x, y, (out, t) => F.crossEntropy(out, t));
          assert.ok(fl.sameDevice(loss.device, devices[p - 1]));
          if (i === 0) {
            const ref = fl.tidy(() => F.crossEntropy(single.forward(x), y).itemSync());
            assert.ok(Math.abs(loss.itemSync() - ref) < 1e-5, `loss ${loss.itemSync()} vs ${ref}`);
            assert.ok(
              maxParamDiff(
                pipe.parameters().map((q) => q.grad!),
                single.parameters().map((q) => q.grad!),
              ) < 1e-5,
            );
          }
          refOpt.step();
          refOpt.zeroGrad();
          opt.step();
          opt.zeroGrad();
        }
        assert.ok(maxParamDiff(pipe.parameters(), single.parameters()) < 1e-5);
        pipe.stages.forEach((s, i) => assert.ok(s.parameters().every((q) => fl.sameDevice(q.device, devices[i]))));
        const st = pipe.stats()!;
        assert.is(st.theory, (p - 1) / (m + p - 1));
        assert.ok(st.bubble >= 0 && st.bubble < 1, `bubble ${st.bubble}`);
        assert.is(st.busyMs.length, p);
      });
    }

    test(`${devices.join(',')}: 1F1B holds fewer live activations than GPipe (measured)`, async () => {
      const m = 8;
      const [[x, y]] = data(1, 32);
      const peak: Record<string, [number, number, number[]]> = {};
      for (const schedule of ['gpipe', '1f1b'] as const) {
        const pipe = new fl.parallel.Pipeline(stages(p), { devices, microBatches: m, schedule });
        await pipe.step(x, y, (out, t) => F.crossEntropy(out, t));
        const st = pipe.stats()!;
        peak[schedule] = [st.peakLiveActivations, st.peakActivationBytes, st.peakLivePerStage];
      }
      assert.equal(peak.gpipe[2], Array(p).fill(m));
      assert.equal(
        peak['1f1b'][2],
        Array.from({ length: p }, (_, s) => p - s),
      );
      assert.ok(peak['1f1b'][0] < peak.gpipe[0]);
      assert.ok(peak['1f1b'][1] < peak.gpipe[1], `bytes: 1f1b ${peak['1f1b'][1]} vs gpipe ${peak.gpipe[1]}`);
    });
  }
}

test('schedules: every stage runs each F and B once, F before B, 1F1B warm-up of p − s − 1', () => {
  for (const [p, m] of [
    [2, 1],
    [2, 4],
    [4, 8],
    [4, 2],
  ]) {
    for (const schedule of ['gpipe', '1f1b'] as const) {
      const ticks = fl.parallel.pipelineTicks(schedule, p, m);
      const flat = ticks.flat();
      assert.is(flat.length, 2 * p * m);
      for (let s = 0; s < p; s++) {
        const order = fl.parallel.stageOrder(schedule, p, m, s);
        assert.equal(
          flat.filter((a) => a.stage === s),
          order,
        );
        if (schedule === '1f1b')
          assert.is(
            order.findIndex((a) => a.kind === 'B'),
            Math.min(p - s, m),
          );
      }
      // Uniform costs: GPipe and 1F1B both take 2(m + p − 1) ticks.
      assert.is(ticks.length, 2 * (m + p - 1), `${schedule} p=${p} m=${m}`);
    }
  }
  assert.is(fl.parallel.theoreticalBubble(4, 8), 3 / 11);
});

test('bad options are refused with ERR_ARG; a batch too small for the micro-batches is ERR_SHAPE', async () => {
  assert.throws(() => new fl.parallel.Pipeline(stages(2), { devices: ['cpu'], microBatches: 2 }), /one device per stage/);
  assert.throws(
    () => new fl.parallel.Pipeline(stages(2), { devices: ['cpu', 'cpu'], microBatches: 0 }),
    (e: { code?: string }) => e.code === 'ERR_RANGE',
  );
  assert.throws(
    () => new fl.parallel.Pipeline(stages(2), { devices: ['cpu', 'cpu'], microBatches: 2, schedule: 'zb' as never }),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  const pipe = new fl.parallel.Pipeline(stages(2), { devices: ['cpu', 'cpu'], microBatches: 4 });
  try {
    await pipe.step(fl.randn([3, 8]), fl.randint(0, 4, [3]), (o, t) => F.crossEntropy(o, t));
    assert.unreachable();
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_SHAPE');
  }
  const failing = new fl.parallel.Pipeline(stages(2), { devices: ['cpu', 'cpu'], microBatches: 2 });
  try {
    await failing.step(fl.randn([4, 8]), fl.randint(0, 4, [4]), () => {
      throw new Error('loss failed');
    });
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, 'loss failed');
  }
});

test.run();
