/**
 * GPT-mini on the CPU, side by side: examples/gpt_mini.ts (flockml) and its PyTorch anchor
 * (bench/anchors/torch_gpt_mini.py, 2 threads), each over the same seeds and step count. Prints one
 * JSON line per run, then one summary line: mean validation loss and tokens/s of each framework,
 * the loss gap (relative) and the throughput ratio, with the machine's 1-minute load average at the
 * start and the end (the runs take turns, so a busy machine slows both, though not always alike).
 *   npm run bench -- gpt-mini [--steps N] [--seeds S] [--batch B] [--no-anchor]
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { numberFlag } from './shared/args';

const argv = process.argv.slice(2);
const steps = numberFlag('steps', 200);
const seeds = numberFlag('seeds', 3);
const batch = numberFlag('batch', 32);
const root = join(__dirname, '..');

interface Result {
  val_loss: number;
  tokens_per_s: number;
}

/** Runs a command and returns its last JSON line. */
function run(cmd: string, args: string[]): Result {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}:\n${r.stdout}`);
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]) as Result;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function main(): void {
  const loadBefore = loadavg()[0];
  const common = ['--steps', String(steps), '--batch', String(batch)];
  const ours: Result[] = [];
  const theirs: Result[] = [];
  for (let seed = 0; seed < seeds; seed++) {
    const a = run(join(root, 'node_modules', '.bin', 'tsx'), [
      join(root, 'examples', 'gpt_mini.ts'),
      ...common,
      '--seed',
      String(seed),
      '--threads',
      '2',
      '--no-sample',
    ]);
    ours.push(a);
    console.log(JSON.stringify({ bench: 'gpt-mini', framework: 'flockml', seed, steps, ...a }));
    if (argv.includes('--no-anchor')) continue;
    const b = run('/usr/bin/python3', [join(root, 'bench', 'anchors', 'torch_gpt_mini.py'), ...common, '--seed', String(seed)]);
    theirs.push(b);
    console.log(JSON.stringify({ bench: 'gpt-mini', framework: 'pytorch', seed, steps, ...b }));
  }
  const summary: Record<string, unknown> = {
    bench: 'gpt-mini',
    summary: true,
    steps,
    seeds,
    flockml_val_loss: Number(mean(ours.map((r) => r.val_loss)).toFixed(4)),
    flockml_tokens_per_s: Math.round(mean(ours.map((r) => r.tokens_per_s))),
  };
  if (theirs.length) {
    const lt = mean(theirs.map((r) => r.val_loss));
    const tt = mean(theirs.map((r) => r.tokens_per_s));
    summary.pytorch_val_loss = Number(lt.toFixed(4));
    summary.pytorch_tokens_per_s = Math.round(tt);
    summary.val_loss_gap = Number(((mean(ours.map((r) => r.val_loss)) - lt) / lt).toFixed(4));
    summary.throughput_ratio = Number((mean(ours.map((r) => r.tokens_per_s)) / tt).toFixed(3));
  }
  summary.load_1m = [Number(loadBefore.toFixed(2)), Number(loadavg()[0].toFixed(2))];
  console.log(JSON.stringify(summary));
}

main();
