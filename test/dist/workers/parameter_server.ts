/**
 * Parameter-server scenarios, chosen by MODE; every rank prints one JSON line starting {"ps": …}.
 *   sync      2 servers + 2 workers, staleness 0, SGD with momentum: the first worker also replays
 *             the same batches as single-process SGD on the averaged gradient and reports the gap;
 *             workers report their transport and final parameters.
 *   stale     1 server + 3 workers, staleness 1, the last worker slowed: staleness per push.
 *   kill      1 server + 3 workers, staleness 2: rank 3 SIGKILLs itself mid-run; a fifth process
 *             joins as rank 3 once it is gone and pulls the current parameters.
 *   serverdie 2 servers + 2 workers: server rank 1 SIGKILLs itself; workers report their error.
 *   misfit    1 server + 2 workers, staleness 0: rank 2 first offers a different model, then another
 *             staleness, then joins properly and goes silent; rank 1 trains on once it is dropped.
 *   twice     1 server + 1 worker, and a third process that joins as rank 1 again while the first
 *             is alive: the first is superseded, the second trains.
 *   noshm     1 server that cannot map shared memory + 2 workers: rank 1 with FLOCKML_TRANSPORT=shm
 *             reports its error, rank 2 (auto) trains over TCP.
 *   failstop  1 server + 1 worker, staleness 0: the worker's third batch has an out-of-range target
 *             (fail-stop): its push rejects and sends nothing; it goes on with the next batch, and the
 *             parameters equal single-process SGD on the good batches.
 */
import * as fl from '../../../lib/index';
import { Store } from '../../../lib/distributed/store';
import { native } from '../../../lib/native';

const mode = process.env.MODE ?? 'sync';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const report = (o: Record<string, unknown>) => console.log(JSON.stringify({ ps: mode, rank: Number(process.env.RANK), ...o }));

// The fifth process of `kill` is the replacement for rank 3.
const joiner = mode === 'kill' && process.env.RANK === '4';
const second = mode === 'twice' && process.env.RANK === '2';
if (mode === 'twice') {
  process.env.WORLD_SIZE = process.env.LOCAL_WORLD_SIZE = '2';
  if (second) process.env.RANK = process.env.LOCAL_RANK = '1';
}
if (mode === 'kill') {
  process.env.WORLD_SIZE = process.env.LOCAL_WORLD_SIZE = '4';
  if (joiner) process.env.RANK = process.env.LOCAL_RANK = '3';
}

function makeModel(): fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor } {
  fl.manualSeed(0);
  return new fl.nn.Sequential(new fl.nn.Linear(6, 5), new fl.nn.Tanh(), new fl.nn.Linear(5, 3));
}

/** Worker w's batch at step i: the same on every process that asks. */
function batch(w: number, i: number): [fl.Tensor, fl.Tensor] {
  fl.manualSeed(1000 + 10 * i + w);
  return [fl.randn([4, 6]), fl.randint(0, 3, [4])];
}

async function flat(model: fl.nn.Module): Promise<number[]> {
  const out: number[] = [];
  for (const p of model.parameters()) out.push(...((await p.data()) as Float32Array));
  return out;
}

async function sync(): Promise<void> {
  const model = makeModel();
  const optimizerOptions = { lr: 0.1, momentum: 0.9, weightDecay: 0.01 };
  const ps = await fl.parallel.ParameterServer.create(model, { servers: 2, staleness: 0, optimizer: fl.optim.SGD, optimizerOptions });
  if (ps.isServer) return report({ server: await ps.serve(), shards: ps.shards });
  const w = ps.rank - ps.servers,
    steps = 5;
  const stale: number[] = [];
  for (let i = 0; i < steps; i++) {
    await ps.pull();
    const [x, y] = batch(w, i);
    model.zeroGrad();
    fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    stale.push((await ps.push()).staleness);
  }
  await ps.pull();
  const got = await flat(model);
  await ps.close();
  let gap = -1;
  if (w === 0) {
    // Single-process SGD on the average of both workers' gradients.
    const ref = makeModel();
    const opt = new fl.optim.SGD(ref.parameters(), optimizerOptions);
    for (let i = 0; i < steps; i++) {
      opt.zeroGrad();
      const losses = [0, 1].map((v) => {
        const [x, y] = batch(v, i);
        return fl.nn.functional.crossEntropy(ref.forward(x), y);
      });
      losses[0].add(losses[1]).div(2).backward();
      opt.step();
    }
    const want = await flat(ref);
    const init = await flat(makeModel());
    gap = Math.max(...want.map((v, j) => Math.abs(v - got[j])));
    report({ gap, moved: Math.max(...want.map((v, j) => Math.abs(v - init[j]))), stale, clock: ps.clock, transport: ps.transport, got });
    return;
  }
  report({ stale, clock: ps.clock, gap, transport: ps.transport, got });
}

async function stale(): Promise<void> {
  const model = makeModel();
  const ps = await fl.parallel.ParameterServer.create(model, { staleness: 1, optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.05 } });
  if (ps.isServer) return report({ server: await ps.serve() });
  let early = '';
  try {
    await ps.push();
  } catch (e) {
    early = (e as { code: string }).code;
  }
  const slow = ps.rank === ps.worldSize - 1;
  const pulls: number[] = [];
  for (let i = 0; i < 20; i++) {
    pulls.push((await ps.pull()).staleness);
    const [x, y] = batch(ps.rank, i);
    model.zeroGrad();
    fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    if (slow) await sleep(40);
    await ps.push();
  }
  await ps.close();
  report({ worker: ps.stats, pulls, early });
}

async function kill(): Promise<void> {
  const model = makeModel();
  const init = await flat(model);
  const env = process.env;
  // Rank 0 hosts the store inside create(); the replacement connects first, to wait for its cue.
  const connect = () => Store.connect({ host: '127.0.0.1', port: Number(env.MASTER_PORT), token: String(env.FLOCKML_TOKEN) });
  const early = joiner ? await connect() : null;
  if (early) {
    await early.get('test/victim-dying');
    await sleep(300);
  }
  const ps = await fl.parallel.ParameterServer.create(model, { staleness: 2, optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.05 } });
  const store = early ?? (await connect());
  if (ps.isServer) {
    await store.close();
    return report({ server: await ps.serve() });
  }
  const startClock = ps.clock;
  let moved = 0;
  const steps = joiner ? 10 : ps.rank === 3 ? 1000 : 80;
  for (let i = 0; i < steps; i++) {
    await ps.pull();
    if (i === 0) moved = Math.max(...(await flat(model)).map((v, j) => Math.abs(v - init[j])));
    const [x, y] = batch(ps.rank, i);
    model.zeroGrad();
    fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    await ps.push();
    if (ps.rank === 3 && !joiner && i === 5) {
      await store.set('test/victim-dying', '1');
      process.kill(process.pid, 'SIGKILL');
    }
    await sleep(20);
  }
  await ps.close();
  await store.close();
  report({ worker: ps.stats, joiner, startClock, moved });
}

async function serverDie(): Promise<void> {
  const model = makeModel();
  const ps = await fl.parallel.ParameterServer.create(model, { servers: 2, optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.05 } });
  if (ps.rank === 1) {
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), 1500);
    await ps.serve();
    return;
  }
  if (ps.isServer) return report({ server: await ps.serve() });
  const started = Date.now();
  try {
    for (let i = 0; ; i++) {
      await ps.pull();
      const [x, y] = batch(ps.rank, i);
      model.zeroGrad();
      fl.nn.functional.crossEntropy(model.forward(x), y).backward();
      await ps.push();
      await sleep(10);
    }
  } catch (e) {
    const err = e as { code: string; message: string };
    let again = '';
    try {
      await ps.pull();
    } catch (e2) {
      again = (e2 as { code: string }).code;
    }
    report({ failed: true, code: err.code, message: err.message, again, ms: Date.now() - started });
    process.exit(3);
  }
}

async function misfit(): Promise<void> {
  const o = { staleness: 0, optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.05 }, timeoutMs: 5000 };
  const model = makeModel();
  if (process.env.RANK !== '2') {
    const ps = await fl.parallel.ParameterServer.create(model, o);
    if (ps.isServer) return report({ server: await ps.serve() });
    for (let i = 0; i < 5; i++) {
      await ps.pull();
      const [x, y] = batch(1, i);
      model.zeroGrad();
      fl.nn.functional.crossEntropy(model.forward(x), y).backward();
      await ps.push();
    }
    // A second push on the same read would be 1 clock stale, over the bound of 0.
    let again = '';
    try {
      await ps.push();
    } catch (e) {
      again = `${(e as { code: string }).code}: ${(e as Error).message}`;
    }
    await ps.close();
    return report({ worker: ps.stats, again });
  }
  const errors: Array<{ code: string; message: string }> = [];
  const attempt = async (f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (e) {
      errors.push({ code: (e as { code: string }).code, message: (e as Error).message });
    }
  };
  const wide = new fl.nn.Sequential(new fl.nn.Linear(6, 7), new fl.nn.Tanh(), new fl.nn.Linear(7, 3));
  await attempt(() => fl.parallel.ParameterServer.create(wide, o));
  await attempt(() => fl.parallel.ParameterServer.create(model, { ...o, staleness: 1 }));
  const ps = await fl.parallel.ParameterServer.create(model, o);
  await ps.pull();
  await sleep(12_000);
  const [x, y] = batch(2, 0);
  model.zeroGrad();
  fl.nn.functional.crossEntropy(model.forward(x), y).backward();
  await attempt(() => ps.push());
  report({ errors });
}

async function twice(): Promise<void> {
  const model = makeModel();
  const env = process.env;
  const connect = () => Store.connect({ host: '127.0.0.1', port: Number(env.MASTER_PORT), token: String(env.FLOCKML_TOKEN) });
  const o = { staleness: 0, optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.05 } };
  if (second) {
    const store = await connect();
    await store.get('test/first-ready');
    await store.close();
  }
  const ps = await fl.parallel.ParameterServer.create(model, o);
  if (ps.isServer) return report({ server: await ps.serve() });
  const step = async (i: number) => {
    await ps.pull();
    const [x, y] = batch(1, i);
    model.zeroGrad();
    fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    await ps.push();
  };
  if (second) {
    const startClock = ps.clock;
    for (let i = 0; i < 3; i++) await step(i);
    await ps.close();
    return report({ second: true, startClock, worker: ps.stats });
  }
  for (let i = 0; i < 2; i++) await step(i);
  const store = await connect();
  await store.set('test/first-ready', '1');
  await store.close();
  let error = '';
  try {
    for (let i = 2; i < 500; i++) {
      await step(i);
      await sleep(20);
    }
  } catch (e) {
    error = `${(e as { code: string }).code}: ${(e as Error).message}`;
  }
  report({ second: false, error });
}

/** A server that cannot map shared memory: a worker that insists on it fails, one on 'auto' trains over TCP. */
async function noShm(): Promise<void> {
  const rank = Number(process.env.RANK);
  if (rank === 0)
    native.psShmOpen = () => {
      throw new Error('no shared memory here');
    };
  process.env.FLOCKML_TRANSPORT = rank === 1 ? 'shm' : 'auto';
  const model = makeModel();
  let ps: fl.parallel.ParameterServer;
  try {
    ps = await fl.parallel.ParameterServer.create(model, {
      staleness: 1,
      optimizer: fl.optim.SGD,
      optimizerOptions: { lr: 0.1 },
      timeoutMs: 3000,
    });
  } catch (e) {
    return report({ code: (e as { code?: string }).code, message: (e as Error).message });
  }
  if (ps.isServer) return report({ server: await ps.serve() });
  for (let i = 0; i < 3; i++) {
    await ps.pull();
    const [x, y] = batch(0, i);
    model.zeroGrad();
    fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    await ps.push();
  }
  await ps.close();
  report({ transport: ps.transport, worker: ps.stats });
}

async function failStop(): Promise<void> {
  const model = makeModel();
  const optimizerOptions = { lr: 0.1, momentum: 0.9 };
  const ps = await fl.parallel.ParameterServer.create(model, { staleness: 0, optimizer: fl.optim.SGD, optimizerOptions });
  if (ps.isServer) return report({ server: await ps.serve() });
  const errors: string[] = [];
  const good: number[] = [];
  for (let i = 0; i < 4; i++) {
    await ps.pull();
    const [x, y] = batch(0, i);
    model.zeroGrad();
    try {
      fl.nn.functional.crossEntropy(model.forward(x), i === 2 ? y.add(3) : y).backward();
      await ps.push();
      good.push(i);
    } catch (e) {
      errors.push(`${i}:${(e as { code?: string }).code}`);
    }
  }
  await ps.pull();
  const got = await flat(model);
  const clock = ps.clock;
  await ps.close();
  const ref = makeModel();
  const opt = new fl.optim.SGD(ref.parameters(), optimizerOptions);
  for (const i of good) {
    opt.zeroGrad();
    const [x, y] = batch(0, i);
    fl.nn.functional.crossEntropy(ref.forward(x), y).backward();
    opt.step();
  }
  const want = await flat(ref);
  report({ errors, good, clock, gap: Math.max(...want.map((v, j) => Math.abs(v - got[j]))) });
}

const modes: Record<string, () => Promise<void>> = {
  sync,
  stale,
  kill,
  serverdie: serverDie,
  misfit,
  twice,
  noshm: noShm,
  failstop: failStop,
};
modes[mode]().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
