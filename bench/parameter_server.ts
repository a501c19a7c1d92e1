/**
 * Parameter-server throughput with one worker slowed 2× (it sleeps as long as each of its steps
 * took): 1 server + W workers (W = 2 and 3 by default) train the Fashion-MNIST MLP (784-128-10, batch 64 per worker, random
 * inputs, SGD) for a fixed time. The anchor, run in the same command, is synchronous training
 * (staleness 0), where every worker waits for the slow one each step; it is compared with
 * asynchronous training (staleness Infinity) and with bounded staleness (2), where the fast workers
 * may run ahead by 2 clocks only. Goal: async ≥ 1.5× sync.
 * The modes alternate for R rounds (default 3) so that drift in the machine's load hits them alike;
 * prints one JSON line per run {"bench":"parameter_server","mode":…,"round":…,"staleness":…,
 * "samples_per_s":…,"steps_per_worker":[…],"max_staleness":…} and, per W, a line with the ratios of
 * the median rates.
 * Every rank is a process: on a machine with fewer cores than ranks they compete for the CPU, which
 * the ideal ratio ((W − 0.5) / (W / 2), one device per worker) does not account for.
 * --model wide is an extra row, not the anchor's model: 784-1024-1024-10 (1.86 M parameters, each
 * step ~18× the MLP's compute), where compute rather than the server path bounds the rate.
 *   npm run bench -- parameter_server [--seconds S] [--workers 2,3] [--rounds R] [--model mlp|wide]
 * The same file is each rank's script (PS_BENCH_STALENESS set by the launcher call below).
 */
import { join } from 'node:path';
import { cpus } from 'node:os';
import { launch } from '../lib/distributed/launch';
import * as fl from '../lib';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rank(): Promise<void> {
  const staleness = Number(process.env.PS_BENCH_STALENESS);
  const seconds = Number(process.env.PS_BENCH_SECONDS);
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
    const s = await ps.serve();
    console.log(JSON.stringify({ server: true, updates: s.updates, maxStaleness: s.maxStaleness }));
    return;
  }
  const x = fl.randn([64, 784]),
    y = fl.randint(0, 10, [64]);
  const slow = ps.rank === ps.worldSize - 1;
  await ps.pull();
  const started = performance.now();
  let steps = 0;
  while (performance.now() - started < seconds * 1000) {
    if (steps > 0) await ps.pull();
    // The slowdown doubles the worker's own work (compute and push), not its waits on others.
    const t0 = performance.now();
    fl.tidy(() => {
      model.zeroGrad();
      fl.nn.functional.crossEntropy(model.forward(x), y).backward();
    });
    await ps.push();
    steps++;
    if (slow) await sleep(performance.now() - t0);
  }
  const ms = performance.now() - started;
  await ps.close();
  console.log(
    JSON.stringify({ worker: ps.rank, steps, ms, samples: steps * 64, maxStaleness: ps.stats.maxStaleness, transport: ps.transport }),
  );
}

async function main(): Promise<void> {
  const seconds = Number(arg('seconds', '6'));
  const rounds = Number(arg('rounds', '3'));
  const model = arg('model', 'mlp');
  if (model !== 'mlp' && model !== 'wide') throw new Error(`--model must be mlp or wide, got ${model}`);
  for (const workers of arg('workers', '2,3').split(',').map(Number)) await compare(workers, seconds, rounds, model);
}

const MODES = [
  ['sync', 0],
  ['async', Infinity],
  ['bounded', 2],
] as const;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function compare(workers: number, seconds: number, rounds: number, model: string): Promise<void> {
  const rates: Record<string, number[]> = { sync: [], async: [], bounded: [] };
  for (let round = 0; round < rounds; round++)
    for (const [mode, staleness] of MODES) rates[mode].push(await run(workers, seconds, round, mode, staleness, model));
  const sync = median(rates.sync);
  console.log(
    JSON.stringify({
      bench: 'parameter_server',
      model,
      workers,
      rounds,
      anchor: 'sync',
      median_samples_per_s: { sync: Math.round(sync), async: Math.round(median(rates.async)), bounded: Math.round(median(rates.bounded)) },
      async_vs_sync: Number((median(rates.async) / sync).toFixed(2)),
      bounded_vs_sync: Number((median(rates.bounded) / sync).toFixed(2)),
      ideal_async_vs_sync: Number(((workers - 0.5) / (workers / 2)).toFixed(2)),
      goal_async_vs_sync: 1.5,
      cpus: cpus().length,
    }),
  );
}

async function run(workers: number, seconds: number, round: number, mode: string, staleness: number, model: string): Promise<number> {
  let out = '';
  const code = await launch({
    script: join(__dirname, 'parameter_server.ts'),
    nprocPerNode: workers + 1,
    masterPort: 20000 + Math.floor(Math.random() * 10000),
    env: { PS_BENCH_RANK: '1', PS_BENCH_STALENESS: String(staleness), PS_BENCH_SECONDS: String(seconds), PS_BENCH_MODEL: model },
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
      model,
      mode,
      round,
      staleness: staleness === Infinity ? 'Infinity' : staleness,
      workers,
      slowed: `rank ${workers} 2x`,
      seconds,
      samples_per_s: Math.round(rate),
      steps_per_worker: ws.map((w) => w.steps),
      max_staleness: server?.maxStaleness,
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
