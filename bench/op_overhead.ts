/**
 * Per-op overhead: microseconds per call of ops too small for their arithmetic to matter ([16] f32
 * element-wise and reductions, a [16,16] matmul), and of a tiny MLP training step (32→64→10,
 * batch 16, cross entropy, SGD), side by side with PyTorch eager on the same work
 * (bench/anchors/torch_op_overhead.py, 1 thread) in the same command. flockml and PyTorch alternate
 * round by round (as bench/fashion_mnist.ts does), so both see the same machine.
 *
 * Cases (each round is `ops` calls, or `steps` MLP steps; results are kept and disposed as a user
 * would: every call's result lives until the round's fl.tidy ends, which disposes it):
 *   add        c = a.add(b)           mul     c = a.mul(b)       relu   c = a.relu()
 *   add-chain  x = x.add(b)           sum     c = a.sum()        matmul c = m.matmul(m)
 *   mlp        forward, crossEntropy, zeroGrad, backward, SGD step (µs per step)
 * Each case first runs `--warmup` untimed rounds (default 10). Every round ends with
 * `await fl.sync()`, so queued kernels are part of the time. One JSON line per round per case
 * with both figures and their ratio, then a summary line per case with both medians over the
 * rounds and the ratio of the medians (flockml's µs over PyTorch's; < 1 is faster), and
 * `inline_per_call`: kernels the CPU stream ran on the JS thread per call in the last round (small
 * kernels run there when its worker is idle with nothing queued; see cpp/cpu/stream.h).
 * It measures what `require('flockml')` gives a user: the compiled package (dist/, brought up to
 * date with tsc first). `--source lib` runs the TypeScript sources through tsx instead, whose
 * CommonJS interop puts a getter call on every imported binding (~0.06 µs of an add).
 *   npm run bench -- op-overhead [--ops N] [--steps S] [--rounds R] [--warmup W] [--cases add,mlp] [--no-anchor] [--source dist|lib]
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Anchor, median } from './anchors/serve';
import { flag, numberFlag, stringFlag } from './shared/args';

const argv = process.argv.slice(2);
const source = stringFlag('source', 'dist');
if (source !== 'dist' && source !== 'lib') throw new Error(`op-overhead: --source must be dist or lib, got ${source}`);
const root = join(__dirname, '..');
if (source === 'dist') {
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.json')], {
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error('op-overhead: compiling dist/ with tsc failed');
}
// dist/lib (the compiled package) or lib/ (the sources).
const libDir = source === 'dist' ? join(root, 'dist', 'lib') : join(root, 'lib');
const fl: typeof import('../lib') = require(libDir);
const { native }: typeof import('../lib/native') = require(join(libDir, 'native'));
const ops = numberFlag('ops', 10000);
const steps = numberFlag('steps', 1000);
const rounds = numberFlag('rounds', 5);
const warmup = numberFlag('warmup', 10);
const ALL = ['add', 'add-chain', 'mul', 'relu', 'sum', 'matmul', 'mlp'] as const;
type Case = (typeof ALL)[number];
const chosen = flag('cases')?.split(',') ?? [...ALL];
const unknown = chosen.filter((c) => !(ALL as readonly string[]).includes(c));
if (unknown.length) throw new Error(`op-overhead: unknown case(s) ${unknown.join(', ')}; available: ${ALL.join(', ')}`);
const cases = chosen as Case[];

fl.manualSeed(0);
const a = fl.randn([16]);
const b = fl.randn([16]);
const m = fl.randn([16, 16]);
const model = new fl.nn.Sequential(new fl.nn.Linear(32, 64), new fl.nn.ReLU(), new fl.nn.Linear(64, 10));
const opt = new fl.optim.SGD(model.parameters(), { lr: 0.01 });
const x = fl.randn([16, 32]);
const y = fl.randint(0, 10, [16]);

/** The body of one round of `case`: how many calls (or steps) it makes. */
function body(c: Case): number {
  switch (c) {
    case 'add':
      for (let i = 0; i < ops; i++) a.add(b);
      return ops;
    case 'add-chain': {
      let t = a;
      for (let i = 0; i < ops; i++) t = t.add(b);
      return ops;
    }
    case 'mul':
      for (let i = 0; i < ops; i++) a.mul(b);
      return ops;
    case 'relu':
      for (let i = 0; i < ops; i++) a.relu();
      return ops;
    case 'sum':
      for (let i = 0; i < ops; i++) a.sum();
      return ops;
    case 'matmul':
      for (let i = 0; i < ops; i++) m.matmul(m);
      return ops;
    case 'mlp':
      for (let i = 0; i < steps; i++)
        fl.tidy(() => {
          const loss = fl.nn.functional.crossEntropy(model.forward(x), y);
          opt.zeroGrad();
          loss.backward();
          opt.step();
        });
      return steps;
  }
}

let inlinePerCall = 0; // of the last round

/** One timed round of `case`: microseconds per call (per step for mlp). */
async function round(c: Case): Promise<number> {
  const inline0 = native.streamInlineTasks('cpu');
  const t0 = performance.now();
  const n = fl.tidy(() => body(c));
  await fl.sync();
  const us = ((performance.now() - t0) * 1000) / n;
  inlinePerCall = (native.streamInlineTasks('cpu') - inline0) / n;
  return us;
}

async function main(): Promise<void> {
  let anchor: Anchor | null = null;
  let torchInfo: Record<string, unknown> = {};
  if (!argv.includes('--no-anchor')) {
    const args = ['--ops', String(ops), '--steps', String(steps)];
    const started = await Anchor.start(join(__dirname, 'anchors', 'torch_op_overhead.py'), args);
    if ('skipped' in started) console.log(JSON.stringify({ bench: 'op-overhead', impl: 'torch', skipped: started.skipped }));
    else {
      anchor = started.anchor;
      torchInfo = { torch: started.ready.torch, torch_threads: started.ready.threads };
    }
  }
  // Warm-up: V8 tiers the op path up to optimized code over the first ~10 rounds (the first runs
  // ~2x slower), and the handle table and allocator caches grow to the round's size.
  for (const c of cases) for (let i = 0; i < warmup; i++) await round(c);
  for (const c of cases) {
    const ours: number[] = [],
      theirs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const us = await round(c);
      ours.push(us);
      const line = anchor && (await anchor.request(c));
      if (anchor && !line) {
        console.log(JSON.stringify({ bench: 'op-overhead', case: c, impl: 'torch', skipped: anchor.lastError() }));
        anchor = null;
      }
      const torchUs = line ? Number(line.us_per_op) : undefined;
      if (torchUs !== undefined) theirs.push(torchUs);
      console.log(
        JSON.stringify({
          bench: 'op-overhead',
          case: c,
          round: r,
          us_per_op: +us.toFixed(3),
          ...(torchUs === undefined ? {} : { torch_us_per_op: +torchUs.toFixed(3), ratio: +(us / torchUs).toFixed(3) }),
        }),
      );
    }
    const us = median(ours),
      torchUs = theirs.length ? median(theirs) : undefined;
    console.log(
      JSON.stringify({
        bench: 'op-overhead',
        case: c,
        device: 'cpu',
        impl: 'flockml',
        source,
        calls_per_round: c === 'mlp' ? steps : ops,
        rounds,
        us_per_op: +us.toFixed(3),
        us_min: +Math.min(...ours).toFixed(3),
        inline_per_call: +inlinePerCall.toFixed(2),
        ...(torchUs === undefined
          ? {}
          : {
              ...torchInfo,
              torch_us_per_op: +torchUs.toFixed(3),
              torch_us_min: +Math.min(...theirs).toFixed(3),
              ratio: +(us / torchUs).toFixed(3),
            }),
      }),
    );
  }
  anchor?.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
