/**
 * Runs test/**\/*.test.ts files, each in its own process (a crash in one cannot take down the rest),
 * several at a time, echoes each file's result as it finishes, and ends with one line:
 * `N passed, N failed`.
 *   tsx test/run.ts [--gpu | --sim] [--quick | --slow] [--jobs N] [filter...]
 * --gpu runs only the GPU conformance files (test/gpu/); filters match file paths (`test/ops` runs
 * one area). Files under test/gpu/ run with FLOCKML_CUDA_POISON=1 (fresh CUDA memory filled with NaN).
 * --sim runs the files with a CUDA path (test/sim_suites.ts) on the CUDA simulator's addon
 * (FLOCKML_NATIVE=build-sim/sim/flockml.node, 4 simulated GPUs unless FLOCKML_CUDA_SIM_DEVICES says
 * otherwise, freed device memory poisoned, NCCL from the same addon); test/sim/ runs only then.
 * --quick leaves out the slow tier and the files that start processes, --slow runs only the slow
 * tier (test/tiers.ts).
 * --jobs N files at once (default: the machine's cores; FLOCKML_TEST_JOBS). Files that measure
 * wall-clock bounds (test/tiers.ts exclusiveFiles) run alone. The longest files start first, by the
 * times of the last run (node_modules/.cache/flockml/test-times.json).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { simSuites, simWaiting } from './sim_suites';
import { exclusiveFiles, isQuick, slowFiles } from './tiers';

const root = join(__dirname);
const repo = join(root, '..');
const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const gpuOnly = flag('--gpu');
const simOnly = flag('--sim');
const quick = flag('--quick');
const slowOnly = flag('--slow');
if (simOnly) {
  process.env.FLOCKML_NATIVE ??= 'build-sim/sim/flockml.node';
  process.env.FLOCKML_CUDA_SIM_DEVICES ??= '4';
  // Freed device memory is filled with NaN too, so a kernel reading a buffer after its
  // stream-ordered free shows up.
  process.env.FLOCKML_CUDA_SIM_POISON ??= '1';
  // The simulator's addon exports the NCCL symbols itself (sim/nccl_api.cc).
  process.env.FLOCKML_NCCL_PATH ??= resolve(repo, process.env.FLOCKML_NATIVE);
}

const jobsAt = args.indexOf('--jobs');
const jobsGiven = jobsAt >= 0 ? args[jobsAt + 1] : process.env.FLOCKML_TEST_JOBS;
const jobs = jobsGiven === undefined ? availableParallelism() : Number(jobsGiven);
if (!Number.isInteger(jobs) || jobs < 1) {
  console.error(`test/run.ts: --jobs must be a positive integer, got ${jobsGiven}`);
  process.exit(2);
}
const filters = args.filter((a, i) => !a.startsWith('--') && !(jobsAt >= 0 && i === jobsAt + 1));

function find(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const inRepo = (f: string) => relative(repo, f);
const files = find(root)
  .map(inRepo)
  .filter((f) => !gpuOnly || f.startsWith('test/gpu/'))
  .filter((f) => (simOnly ? simSuites.some((s) => f.startsWith(s)) : !f.startsWith('test/sim/')))
  .filter((f) => !quick || isQuick(f))
  .filter((f) => !slowOnly || slowFiles.includes(f))
  .filter((f) => filters.length === 0 || filters.some((flt) => resolve(repo, f).includes(flt) || f.includes(flt)));

if (simOnly) for (const [file, why] of Object.entries(simWaiting)) console.log(`not on the simulator: ${file} (${why})`);

// Longest first (as measured last time; slow-tier and distributed files first on a fresh clone), so
// the last files to finish are short ones and the cores stay busy to the end.
const timesFile = join(repo, 'node_modules', '.cache', 'flockml', `test-times${simOnly ? '-sim' : ''}.json`);
const times: Record<string, number> = (() => {
  try {
    return JSON.parse(readFileSync(timesFile, 'utf8'));
  } catch {
    return {};
  }
})();
const guess = (f: string) => times[f] ?? (slowFiles.includes(f) ? 100 : f.startsWith('test/dist/') ? 10 : 1);
files.sort((a, b) => guess(b) - guess(a) || a.localeCompare(b));

// Test files are TypeScript, loaded through tsx's hooks in one node process (tsx's CLI wrapper
// would start a second one for each file).
const node = [process.execPath, '--import', 'tsx'];

interface Result {
  file: string;
  ok: number;
  failed: number;
  secs: number;
  out: string;
  killed: string | null;
}

function runFile(file: string): Promise<Result> {
  const started = Date.now();
  const env = { ...process.env, FORCE_COLOR: '0', ...(file.startsWith('test/gpu/') ? { FLOCKML_CUDA_POISON: '1' } : {}) };
  return new Promise((done) => {
    const child = spawn(node[0], [...node.slice(1), file], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20 * 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const total = Number(/Total:\s+(\d+)/.exec(out)?.[1] ?? 0);
      const ok = Number(/Passed:\s+(\d+)/.exec(out)?.[1] ?? 0);
      const skipped = Number(/Skipped:\s+(\d+)/.exec(out)?.[1] ?? 0);
      let failed = total - ok - skipped;
      if (code !== 0 && failed === 0) failed = 1; // crashed or exited non-zero outside a test
      if (total === 0 && code === 0) failed = 1; // a file that ran no test is a failure
      done({ file, ok, failed, secs: (Date.now() - started) / 1000, out, killed: signal });
    });
  });
}

async function main(): Promise<void> {
  const started = Date.now();
  const queue = [...files];
  const results: Result[] = [];
  let running = 0;
  let exclusive = false;
  await new Promise<void>((allDone) => {
    const report = (r: Result) => {
      results.push(r);
      const tail = r.killed ? `, killed by ${r.killed}` : '';
      console.log(`${r.failed ? 'FAIL' : 'ok  '} ${r.file}  (${r.ok}/${r.ok + r.failed} in ${r.secs.toFixed(1)}s${tail})`);
      if (r.failed || process.env.FLOCKML_TEST_VERBOSE) console.log(r.out.replace(/^/gm, '    '));
    };
    const next = () => {
      if (queue.length === 0 && running === 0) return allDone();
      while (!exclusive && running < jobs && queue.length > 0) {
        // An exclusive file waits until the others have finished, and holds the rest back while it runs.
        const i = queue.findIndex((f) => !exclusiveFiles.includes(f) || running === 0);
        if (i < 0) break;
        const [file] = queue.splice(i, 1);
        exclusive = exclusiveFiles.includes(file);
        running++;
        runFile(file).then((r) => {
          running--;
          if (exclusiveFiles.includes(file)) exclusive = false;
          report(r);
          next();
        });
      }
    };
    next();
  });
  const passed = results.reduce((s, r) => s + r.ok, 0);
  const failed = results.reduce((s, r) => s + r.failed, 0);
  if (filters.length === 0) {
    for (const r of results) times[r.file] = Number(r.secs.toFixed(1));
    mkdirSync(dirname(timesFile), { recursive: true });
    writeFileSync(timesFile, `${JSON.stringify(times, null, 1)}\n`);
  }
  console.log(`${files.length} files in ${((Date.now() - started) / 1000).toFixed(0)} s with ${jobs} at a time`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
