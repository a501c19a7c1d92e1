/** fl.profiler: a profiled CNN step's trace, its streams and key averages; schedules; ranges; options. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../../lib/index';
import type { TraceEvent } from '../../lib/profiler/index';
import { expectError } from '../helpers/reference';

const dir = mkdtempSync(join(tmpdir(), 'flockml-prof-'));

function smallCnn() {
  const { nn } = fl;
  return new nn.Sequential(new nn.Conv2d(1, 4, 3), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(4 * 13 * 13, 10));
}

function trainStep(model: ReturnType<typeof smallCnn>, opt: fl.optim.Adam, x: fl.Tensor, y: fl.Tensor): void {
  fl.tidy(() => {
    const l = fl.nn.functional.crossEntropy(model.forward(x), y);
    opt.zeroGrad();
    l.backward();
    opt.step();
  });
}

const kernels = (events: TraceEvent[]) => events.filter((e) => e.ph === 'X' && e.cat === 'kernel');

test('a profiled CNN step: the trace parses, ops sit on their stream once per call, no overlap, totals match', async () => {
  fl.manualSeed(0);
  const model = smallCnn();
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const x = fl.randn([8, 1, 28, 28]);
  const y = fl.randint(0, 10, [8]);
  trainStep(model, opt, x, y); // the first step creates optimizer state: profile a steady one
  await fl.sync();
  let wall = 0;
  const prof = await fl.profiler.profile({ activities: ['cpu'], recordShapes: true, profileMemory: true }, async () => {
    const t0 = performance.now();
    trainStep(model, opt, x, y);
    await fl.sync();
    wall = (performance.now() - t0) * 1000;
  });
  const path = join(dir, 'cnn.json');
  prof.exportChromeTrace(path);
  const trace = JSON.parse(readFileSync(path, 'utf8')) as { traceEvents: TraceEvent[] };
  const ks = kernels(trace.traceEvents);
  assert.ok(ks.length > 10, `expected the step's kernels, got ${ks.length}`);
  for (const k of ks) {
    assert.is(k.tid, 2, `${k.name} is on the CPU stream`);
    assert.is(k.pid, 0);
    assert.is((k.args as { stream: string }).stream, 'cpu');
    assert.ok((k.dur ?? -1) >= 0 && Number.isFinite(k.ts));
    assert.ok(Number((k.args as { queueDelayUs: number }).queueDelayUs) >= 0);
  }
  const names = new Set(ks.map((k) => k.name));
  for (const want of ['conv2d', 'matmul', 'crossEntropy', 'maxPool2d', 'adamStep'])
    assert.ok(
      [...names].some((n) => n.toLowerCase().includes(want.toLowerCase())),
      `${want} among ${[...names].join(', ')}`,
    );
  // Once per call: every host op that queued work has exactly the kernels stamped inside its call.
  const ops = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'op');
  assert.ok(ops.length > 0 && ops.length <= ks.length);
  for (const o of ops)
    assert.ok(
      ks.some((k) => k.name === o.name && k.ts >= o.ts),
      `${o.name} has its kernel after its call`,
    );
  // One stream runs one task at a time.
  const sorted = [...ks].sort((a, b) => a.ts - b.ts);
  for (let i = 1; i < sorted.length; i++)
    assert.ok(sorted[i].ts >= sorted[i - 1].ts + (sorted[i - 1].dur ?? 0) - 1e-3, `${sorted[i - 1].name} overlaps ${sorted[i].name}`);
  const busy = ks.reduce((s, k) => s + (k.dur ?? 0), 0);
  assert.ok(busy <= wall, `kernel time ${busy}us within the wall time ${wall}us`);
  // Shapes were recorded: the first conv's input is [8, 1, 28, 28].
  assert.ok(ks.some((k) => JSON.stringify((k.args as { shapes?: number[][] }).shapes ?? []).includes('[8,1,28,28]')));
  assert.ok(trace.traceEvents.some((e) => e.ph === 'C' && e.name === 'memory cpu'));
  assert.ok(trace.traceEvents.some((e) => e.ph === 'M' && e.name === 'thread_name' && e.tid === 2));
  // keyAverages agrees with the trace.
  const avg = prof.keyAverages();
  const byName = new Map<string, number>();
  for (const k of ks) byName.set(k.name, (byName.get(k.name) ?? 0) + 1);
  for (const [name, calls] of byName) assert.is(avg.find((r) => r.key === name)?.calls, calls, name);
  const total = avg.reduce((s, r) => s + r.selfDeviceUs, 0);
  assert.ok(Math.abs(total - busy) < 1e-6 * Math.max(1, busy));
  const table = avg.table();
  assert.match(table, /Self device/);
  assert.match(table, /# Calls/);
  if (process.env.FLOCKML_PRINT_TABLE) console.log(table);
  x.dispose();
  y.dispose();
});

test('each call of an op is one kernel on the stream, named by the op', async () => {
  const a = fl.randn([64, 64]);
  const b = fl.randn([64, 64]);
  await fl.sync();
  const prof = await fl.profiler.profile({}, () => {
    for (let i = 0; i < 3; i++) a.add(b).dispose();
    return fl.sync();
  });
  const adds = kernels(prof.events()).filter((k) => k.name === 'add');
  assert.is(adds.length, 3);
  assert.is(prof.keyAverages().find((r) => r.key === 'add')?.calls, 3);
  a.dispose();
  b.dispose();
});

test('start/step/stop with a schedule records only the active steps', () => {
  const a = fl.randn([32, 32]);
  const p = fl.profiler.start({ schedule: { wait: 1, warmup: 1, active: 2 } });
  for (let step = 0; step < 6; step++) {
    a.mul(step + 1).dispose();
    p.step();
  }
  p.stop();
  const ev = p.events();
  assert.is(kernels(ev).filter((k) => k.name === 'mul').length, 2);
  assert.equal(
    ev.filter((e) => e.cat === 'step').map((e) => e.name),
    ['ProfilerStep#2', 'ProfilerStep#3'],
  );
  a.dispose();
});

test('ranges: disposable and callback forms; total device time covers the kernels inside', async () => {
  const a = fl.randn([128, 128]);
  await fl.sync();
  const prof = await fl.profiler.profile({}, async () => {
    {
      using _r = fl.profiler.range('outer');
      a.matmul(a).dispose();
      fl.syncSync();
    }
    const v = fl.profiler.range('inner', () => 42);
    assert.is(v, 42);
    await fl.profiler.range('async', async () => {
      a.add(a).dispose();
      await fl.sync();
    });
  });
  const ranges = prof.events().filter((e) => e.cat === 'range');
  assert.equal(ranges.map((r) => r.name).sort(), ['async', 'inner', 'outer']);
  const outer = prof.keyAverages().find((r) => r.key === 'outer');
  assert.ok(outer && outer.totalDeviceUs > 0 && outer.selfDeviceUs === 0);
  a.dispose();
});

test('not profiling: the addon is left untouched; options are validated', () => {
  const before = fl.add;
  const p = fl.profiler.start();
  expectError(() => fl.profiler.start(), TypeError, 'ERR_ARG');
  p.stop();
  assert.is(fl.profiler.active(), null);
  assert.is(fl.add, before);
  expectError(() => fl.profiler.start({ bogus: 1 } as never), TypeError, 'ERR_ARG');
  expectError(() => fl.profiler.start({ activities: ['gpu'] } as never), TypeError, 'ERR_ARG');
  expectError(() => fl.profiler.start({ schedule: { active: 0 } }), RangeError, 'ERR_RANGE');
  expectError(() => fl.profiler.range(''), TypeError, 'ERR_ARG');
});

test.run();
