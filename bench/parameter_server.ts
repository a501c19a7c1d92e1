/**
 * Parameter-server throughput with one worker slowed 2× (after each step it idles as long as that
 * step took): 1 server + W workers (W = 2 and 3 by default) train the Fashion-MNIST MLP (784-128-10,
 * batch 64 per worker, random inputs, SGD) for a fixed time. The anchor, run in the same command, is
 * synchronous training (staleness 0), where every worker waits for the slow one each step; it is
 * compared with asynchronous training (staleness Infinity) and with bounded staleness (2), where the
 * fast workers may run ahead by 2 clocks only. Goal: async ≥ 1.5× sync.
 * The modes alternate for R rounds (default 3) so that drift in the machine's load hits them alike;
 * prints one JSON line per run {"bench":"parameter_server","mode":…,"round":…,"staleness":…,
 * "samples_per_s":…,"steps_per_worker":[…],"max_staleness":…,"worker_cpu_ms_per_step":[…],
 * "server_cpu_ms_per_update":…} and, per W, a line with the ratios of the median rates.
 *
 * Every rank is a process, and on a machine with fewer cores than busy ranks they compete for the
 * CPU. The ideal ratio, (W − 0.5) / (W / 2), assumes one device per worker; `ideal_on_these_cores`
 * bounds it by the cores: async keeps at most min(W − 0.5, cores) workers' worth of compute busy
 * (server work not counted), sync W / 2. On 2 cores that is 1.5 for W = 2 and 4 / W below it.
 * --device-ms D makes each worker step last at least D ms with its host idle meanwhile, as a worker
 * whose accelerator computes (the real CPU compute runs concurrently): an extra row that measures
 * the protocol rather than the cores, never the anchor's row.
 * --model wide is an extra row, not the anchor's model: 784-1024-1024-10 (1.86 M parameters, each
 * step ~18× the MLP's compute), where compute rather than the server path bounds the rate.
 *   npm run bench -- parameter_server [--seconds S] [--workers 2,3] [--rounds R] [--model mlp|wide] [--device-ms D]
 * The same file is each rank's script (PS_BENCH_STALENESS set by the launcher call below).
 */
import { join } from 'node:path';
import { cpus } from 'node:os';
import { launch } from '../lib/distributed/launch';
import * as fl from '../lib';
import { stringFlag } from './shared/args';

/** Idles this thread for `ms` (fractional; a futex wait, so neither rounded to whole ms as timers are nor spinning). */
const pause = new Int32Array(new SharedArrayBuffer(4));
const idle = (ms: number) => {
  if (ms > 0) Atomics.wait(pause, 0, 0, ms);
};

async function rank(): Promise<void> {
  const staleness = Number(process.env.PS_BENCH_STALENESS);
  const seconds = Number(process.env.PS_BENCH_SECONDS);
  const deviceMs = Number(process.env.PS_BENCH_DEVICE_MS);
  fl.manualSeed(0);
  // One intra-op thread per process: the ranks share the machine's cores, as separate devices would not.
  fl.setNumThreads(1);
  const { nn } = fl;
  const model =
    process.env.PS_BENCH_MODEL === 'wide'
      ? new nn.Sequential(new nn.Linear(784, 1024), new nn.ReLU(), new nn.Linear(1024, 1024), new nn.ReLU(), new nn.Linear(1024, 10))
      : new nn.Sequential(new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10));
  const ps = await fl.parallel.ParameterServer.create(model, { staleness, optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.01 } });
  if (ps.isServer) {
    // From here on (start-up and module loading excluded; the workers' joining included).
    const cpuAtServe = process.cpuUsage();
    const s = await ps.serve();
    const cpu = process.cpuUsage(cpuAtServe);
    console.log(JSON.stringify({ server: true, updates: s.updates, maxStaleness: s.maxStaleness, cpuMs: (cpu.user + cpu.system) / 1000 }));
    return;
  }
  const x = fl.randn([64, 784]),
    y = fl.randint(0, 10, [64]);
  const slow = ps.rank === ps.worldSize - 1;
  await ps.pull();
  const started = performance.now();
  const cpuAtStart = process.cpuUsage();
  let steps = 0;
  while (performance.now() - started < seconds * 1000) {
    if (steps > 0) await ps.pull();
    // The slowdown doubles the worker's own work (compute, device time and push), not its waits on others.
    const t0 = performance.now();
    fl.tidy(() => {
      model.zeroGrad();
      fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    });
    idle(deviceMs - (performance.now() - t0));
    await ps.push();
    steps++;
    if (slow) idle(performance.now() - t0);
  }
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuAtStart);
  await ps.close();
  console.log(
    JSON.stringify({
      worker: ps.rank,
      steps,
      ms,
      samples: steps * 64,
      cpuMs: (cpu.user + cpu.system) / 1000,
      maxStaleness: ps.stats.maxStaleness,
      transport: ps.transport,
    }),
  );
}

async function main(): Promise<void> {
  const seconds = Number(stringFlag('seconds', '6'));
  const rounds = Number(stringFlag('rounds', '3'));
  const model = stringFlag('model', 'mlp');
  const deviceMs = Number(stringFlag('device-ms', '0'));
  if (model !== 'mlp' && model !== 'wide') throw new Error(`--model must be mlp or wide, got ${model}`);
  if (!(deviceMs >= 0 && deviceMs <= 1000)) throw new Error(`--device-ms must be 0 to 1000, got ${stringFlag('device-ms', '0')}`);
  for (const workers of stringFlag('workers', '2,3').split(',').map(Number)) await compare({ workers, seconds, rounds, model, deviceMs });
}

const MODES = [
  ['sync', 0],
  ['async', Infinity],
  ['bounded', 2],
] as const;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Config {
  workers: number;
  seconds: number;
  rounds: number;
  model: string;
  deviceMs: number;
}

async function compare(c: Config): Promise<void> {
  const rates: Record<string, number[]> = { sync: [], async: [], bounded: [] };
  for (let round = 0; round < c.rounds; round++)
    for (const [mode, staleness] of MODES) rates[mode].push(await run(c, round, mode, staleness));
  const sync = median(rates.sync);
  const cores = cpus().length;
  console.log(
    JSON.stringify({
      bench: 'parameter_server',
      model: c.model,
      device_ms: c.deviceMs,
      workers: c.workers,
      rounds: c.rounds,
      anchor: 'sync',
      median_samples_per_s: { sync: Math.round(sync), async: Math.round(median(rates.async)), bounded: Math.round(median(rates.bounded)) },
      async_vs_sync: Number((median(rates.async) / sync).toFixed(2)),
      bounded_vs_sync: Number((median(rates.bounded) / sync).toFixed(2)),
      ideal_async_vs_sync: Number(((c.workers - 0.5) / (c.workers / 2)).toFixed(2)),
      // Where host CPU is the device (no --device-ms), async cannot keep more workers busy than there are cores.
      ideal_on_these_cores: c.deviceMs > 0 ? undefined : Number((Math.min(c.workers - 0.5, cores) / (c.workers / 2)).toFixed(2)),
      goal_async_vs_sync: 1.5,
      cpus: cores,
    }),
  );
}

async function run(c: Config, round: number, mode: string, staleness: number): Promise<number> {
  let out = '';
  const code = await launch({
    script: join(__dirname, 'parameter_server.ts'),
    nprocPerNode: c.workers + 1,
    masterPort: 20000 + Math.floor(Math.random() * 10000),
    env: {
      PS_BENCH_RANK: '1',
      PS_BENCH_STALENESS: String(staleness),
      PS_BENCH_SECONDS: String(c.seconds),
      PS_BENCH_MODEL: c.model,
      PS_BENCH_DEVICE_MS: String(c.deviceMs),
    },
    stdout: {
      write: (s: string) => {
        out += s;
        return true;
      },
    } as unknown as NodeJS.WritableStream,
  });
  if (code !== 0) {
    process.stderr.write(out);
    process.exit(code);
  }
  const lines = out
    .split('\n')
    .map((l) => l.replace(/^\[\d+\] /, ''))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  const ws = lines.filter((l) => l.worker !== undefined).sort((a, b) => a.worker - b.worker);
  const server = lines.find((l) => l.server);
  // Each worker's own rate, summed: what the job processes per second while all of them run.
  const rate = ws.reduce((n, w) => n + w.samples / (w.ms / 1000), 0);
  console.log(
    JSON.stringify({
      bench: 'parameter_server',
      model: c.model,
      device_ms: c.deviceMs,
      mode,
      round,
      staleness: staleness === Infinity ? 'Infinity' : staleness,
      workers: c.workers,
      slowed: `rank ${c.workers} 2x`,
      seconds: c.seconds,
      samples_per_s: Math.round(rate),
      steps_per_worker: ws.map((w) => w.steps),
      max_staleness: server?.maxStaleness,
      // CPU time per step of each worker (its own steps), and of the server per optimizer update.
      worker_cpu_ms_per_step: ws.map((w) => Number((w.cpuMs / w.steps).toFixed(3))),
      server_cpu_ms_per_update: server ? Number((server.cpuMs / Math.max(1, server.updates)).toFixed(3)) : undefined,
      transport: ws[0]?.transport,
    }),
  );
  return rate;
}

if (process.env.PS_BENCH_RANK)
  void rank().catch((e) => {
    console.error(e);
    process.exit(1);
  });
else void main();
