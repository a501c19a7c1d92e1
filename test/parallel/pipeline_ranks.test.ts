/**
 * DistributedPipeline in one process: the message order (every message once, after the action that
 * makes it, and free of deadlock when a send waits for its receiver, as a large one does), option
 * and argument checks, and a one-stage pipeline on a real one-rank group, which must equal plain
 * gradient accumulation. Training across ranks is tested in test/dist/pipeline.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { destroyProcessGroup, initProcessGroup } from '../../lib/distributed';
import { DistributedPipeline } from '../../lib/parallel/pipeline_ranks';
import { type Message, type PlannedTick, lastBackward, messagePlan } from '../../lib/parallel/pipeline_ranks_plan';
import { checkOutput, headerOf, readHeader } from '../../lib/parallel/pipeline_ranks_step';
import { freePort } from '../dist/harness';

const SHAPES: [number, number][] = [
  [1, 1],
  [2, 1],
  [2, 4],
  [3, 2],
  [3, 5],
  [4, 4],
  [4, 8],
  [5, 3],
];
const key = (m: Message) => `${m.kind}${m.from}>${m.to}:${m.micro}`;

test('every activation and gradient is sent once, in the tick of the action that makes it', () => {
  for (const schedule of ['gpipe', '1f1b'] as const)
    for (const [p, m] of SHAPES) {
      const plan = messagePlan(schedule, p, m);
      const seen = new Set<string>();
      for (const t of plan)
        for (const msg of t.messages) {
          assert.not.ok(seen.has(key(msg)), `${key(msg)} twice`);
          seen.add(key(msg));
          const maker = t.actions.find((a) => a.stage === msg.from)!;
          assert.ok(maker, `${key(msg)} sent in a tick where stage ${msg.from} runs nothing`);
          assert.is(maker.kind, msg.kind === 'act' ? 'F' : 'B');
          assert.is(maker.micro, msg.micro);
        }
      assert.is(seen.size, 2 * (p - 1) * m, `${schedule} p=${p} m=${m}`);
      for (let s = 0; s < p; s++) assert.is(lastBackward(plan, s), m - 1);
    }
});

/**
 * Runs the plan as the ranks do, with the strictest transport: each rank's messages go through one
 * queue in the order it posts them, and a send completes only together with its receive (a send
 * larger than the socket buffers). A rank runs an action once its input has arrived, posts its
 * side of each message of the tick in the plan's order, and waits for an activation's header (here:
 * the whole activation) before posting anything after it. Returns whether every rank finished.
 */
function completes(plan: PlannedTick[], p: number, order: (t: PlannedTick, rank: number) => Message[]): boolean {
  type Step = { kind: 'compute'; need: string | null } | { kind: 'send' | 'recv'; msg: string; block: boolean };
  const programs: Step[][] = Array.from({ length: p }, () => []);
  for (const t of plan)
    for (let r = 0; r < p; r++) {
      const a = t.actions.find((x) => x.stage === r);
      if (a) {
        const need = a.kind === 'F' ? (r > 0 ? `act${r - 1}>${r}:${a.micro}` : null) : r < p - 1 ? `grad${r + 1}>${r}:${a.micro}` : null;
        programs[r].push({ kind: 'compute', need });
      }
      for (const msg of order(t, r)) {
        if (msg.from === r) programs[r].push({ kind: 'send', msg: key(msg), block: false });
        else if (msg.to === r) programs[r].push({ kind: 'recv', msg: key(msg), block: msg.kind === 'act' });
      }
    }
  const pc = programs.map(() => 0);
  const queues: { kind: 'send' | 'recv'; msg: string }[][] = programs.map(() => []);
  const done = new Set<string>();
  for (;;) {
    let moved = false;
    for (let r = 0; r < p; r++) {
      for (;;) {
        const s = programs[r][pc[r]];
        if (!s) break;
        if (s.kind === 'compute') {
          if (s.need && !done.has(s.need)) break;
        } else if (s.kind === 'recv' && s.block && !done.has(s.msg)) {
          if (!queues[r].some((q) => q.msg === s.msg)) queues[r].push({ kind: 'recv', msg: s.msg });
          break;
        } else if (!(s.kind === 'recv' && s.block)) queues[r].push({ kind: s.kind, msg: s.msg });
        pc[r]++;
        moved = true;
      }
    }
    for (let a = 0; a < p; a++)
      for (let b = 0; b < p; b++) {
        const qa = queues[a][0],
          qb = queues[b][0];
        if (qa?.kind === 'send' && qb?.kind === 'recv' && qa.msg === qb.msg) {
          queues[a].shift();
          queues[b].shift();
          done.add(qa.msg);
          moved = true;
        }
      }
    if (pc.every((c, r) => c === programs[r].length) && queues.every((q) => q.length === 0)) return true;
    if (!moved) return false;
  }
}

test('the global message order never deadlocks, even when every send waits for its receiver', () => {
  for (const schedule of ['gpipe', '1f1b'] as const)
    for (const [p, m] of SHAPES) {
      const plan = messagePlan(schedule, p, m);
      assert.ok(
        completes(plan, p, (t) => t.messages),
        `${schedule} p=${p} m=${m}`,
      );
    }
  // The check can fail: a rank that posts its own sends before its receives (each in its own
  // natural order) deadlocks 1F1B, where neighbours exchange an activation and a gradient at once.
  const plan = messagePlan('1f1b', 2, 4);
  const sendsFirst = (t: PlannedTick, r: number) => [...t.messages.filter((x) => x.from === r), ...t.messages.filter((x) => x.from !== r)];
  assert.not.ok(completes(plan, 2, sendsFirst));
});

test('activation headers: round trip, and every disagreement with what a stage declared is a coded error naming both stages', () => {
  const t = fl.zeros([7, 3, 5], { dtype: 'f64' });
  const header = headerOf(t, 'cpu', { mode: '1f1b', microBatches: 4, micro: 3 }).dataSync() as BigInt64Array;
  const check = (over: Partial<Parameters<typeof readHeader>[1]> = {}, data: ArrayLike<number | bigint> = header) => {
    try {
      return readHeader(data, {
        op: 'DistributedPipeline.step',
        stage: 2,
        from: 1,
        mode: '1f1b',
        microBatches: 4,
        micro: 3,
        declared: { inputShape: null, inputDtype: null },
        rows: null,
        target: null,
        ...over,
      });
    } catch (e) {
      return e as Error & { code?: string };
    }
  };
  assert.equal(check(), ['f64', [7, 3, 5]]);
  assert.equal(check({ declared: { inputShape: [3, 5], inputDtype: 'f64' }, rows: 7, target: fl.zeros([28]) }), ['f64', [7, 3, 5]]);
  const shape = check({ declared: { inputShape: [3, 6], inputDtype: null } }) as Error & { code?: string };
  assert.is(shape.code, 'ERR_SHAPE');
  assert.match(shape.message, /stage 2 declares its input \[\*, 3, 6\], but stage 1 sent micro-batch 3 as \[7, 3, 5\] f64/);
  const dtype = check({ declared: { inputShape: null, inputDtype: 'f32' } }) as Error & { code?: string };
  assert.is(dtype.code, 'ERR_DTYPE');
  assert.match(dtype.message, /declares its input f32, but stage 1 sent micro-batch 3 as \[7, 3, 5\] f64/);
  const rows = check({ rows: 6, target: fl.zeros([24]) }) as Error & { code?: string };
  assert.is(rows.code, 'ERR_SHAPE');
  assert.match(rows.message, /target \[24\] gives micro-batch 3 6 rows/);
  assert.is((check({}, [99, 2, 1, 4, 3, 1, 1, 0, 0, 0, 0, 0, 0]) as Error & { code?: string }).code, 'ERR_COLLECTIVE_MISMATCH');
  assert.is((check({}, [0, 9, 1, 4, 3, 1, 1, 1, 1, 1, 1, 1, 1]) as Error & { code?: string }).code, 'ERR_COLLECTIVE_MISMATCH');
  // Stages called differently: another schedule, micro-batch count, or forward() against step().
  for (const over of [{ mode: 'gpipe' as const }, { microBatches: 8 }, { mode: 'forward' as const }]) {
    const e = check(over) as Error & { code?: string };
    assert.is(e.code, 'ERR_COLLECTIVE_MISMATCH');
    assert.match(
      e.message,
      /but stage 1 runs step\(\) with 1f1b and 4 micro-batches and sent micro-batch 3; every stage must run the same call/,
    );
  }
  let out: (Error & { code?: string }) | null = null;
  try {
    checkOutput('DistributedPipeline.step', t, 0, 1, [3, 4]);
  } catch (e) {
    out = e as Error & { code?: string };
  }
  assert.is(out?.code, 'ERR_SHAPE');
  assert.match(out!.message, /stage 0 declares its output \[\*, 3, 4\] but its forward made \[7, 3, 5\] for micro-batch 1/);
});

test('options and arguments are checked with coded errors', async () => {
  const module = new fl.nn.Linear(4, 2);
  const err = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as Error & { code?: string };
    }
    throw new Error('expected a throw');
  };
  assert.is(err(() => new DistributedPipeline(module, { group: {} as never, microBatches: 2 })).code, 'ERR_ARG');
  assert.is(err(() => new DistributedPipeline({} as never, { group: {} as never, microBatches: 2 })).code, 'ERR_ARG');

  const pg = await initProcessGroup({
    env: { RANK: '0', WORLD_SIZE: '1', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(freePort()), FLOCKML_TOKEN: 't' },
    timeoutMs: 10_000,
  });
  try {
    assert.is(err(() => new DistributedPipeline(module, { group: pg, microBatches: 2, micro: 3 } as never)).code, 'ERR_ARG');
    assert.is(err(() => new DistributedPipeline(module, { group: pg, microBatches: 0 })).code, 'ERR_RANGE');
    assert.is(err(() => new DistributedPipeline(module, { group: pg, microBatches: 2, schedule: 'zb' as never })).code, 'ERR_ARG');
    assert.is(err(() => new DistributedPipeline(module, { group: pg, microBatches: 2, device: 'cuda:0' })).code, 'ERR_DEVICE');
    assert.is(err(() => new DistributedPipeline(module, { group: pg, microBatches: 2, inputShape: [1.5] })).code, 'ERR_ARG');

    const pipe = new DistributedPipeline(module, { group: pg, microBatches: 4 });
    const mse = (o: fl.Tensor, t: fl.Tensor) => o.sub(t).square().mean();
    const x = fl.randn([8, 4]),
      y = fl.randn([8, 2]);
    const rejects = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (e) {
        return e as Error & { code?: string };
      }
      throw new Error('expected a rejection');
    };
    assert.is((await rejects(pipe.step(x, null, mse))).code, 'ERR_ARG'); // one stage is also the last
    assert.is((await rejects(pipe.step(x, y))).code, 'ERR_ARG');
    assert.is((await rejects(pipe.step(x.narrow(0, 0, 3), y.narrow(0, 0, 3), mse))).code, 'ERR_SHAPE');
    assert.is((await rejects(pipe.step(x, y.narrow(0, 0, 7), mse))).code, 'ERR_SHAPE');

    // Argument errors leave the group usable: a one-stage pipeline over it is gradient
    // accumulation. 8 rows in 3 micro-batches of 3, 3 and 2, each weighted by its share.
    const three = new DistributedPipeline(module, { group: pg, microBatches: 3 });
    assert.is(three.stats(), null);
    const x8 = fl.randn([8, 4]),
      y8 = fl.randn([8, 2]);
    const loss = await three.step(x8, y8, mse);
    const got = module.parameters().map((p) => Array.from(p.grad!.dataSync() as Float32Array));
    for (const p of module.parameters()) p.grad = null;
    const full = mse(module.forward(x8), y8);
    full.backward();
    const want = module.parameters().map((p) => Array.from(p.grad!.dataSync() as Float32Array));
    assert.ok(Math.abs((await loss.item()) - (await full.item())) < 1e-6);
    for (let i = 0; i < got.length; i++)
      for (let j = 0; j < got[i].length; j++) assert.ok(Math.abs(got[i][j] - want[i][j]) < 1e-6, `grad ${i}[${j}]`);
    assert.is(three.stats()!.peakLiveActivations, 1);

    // A loss function that fails mid-step (last: the group is destroyed after it).
    const bad = await rejects(pipe.step(x, y, () => fl.zeros([2])));
    assert.is(bad.code, 'ERR_ARG');
    assert.match(bad.message, /one-element/);
  } finally {
    await destroyProcessGroup();
  }
});

test.run();
