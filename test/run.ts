/**
 * Runs every test/**\/*.test.ts file in its own process (a crash in one cannot take down the rest),
 * echoes its output, and ends with one line: `N passed, N failed`.
 *   tsx test/run.ts [--gpu | --sim] [filter...]
 * --gpu runs only the GPU conformance files (test/gpu/); filters match file paths. Files under
 * test/gpu/ run with FLOCKML_CUDA_POISON=1 (fresh CUDA memory filled with NaN).
 * --sim runs the files with a CUDA path (test/sim_suites.ts) on the CUDA simulator's addon
 * (FLOCKML_NATIVE=build-sim/sim/flockml.node, 4 simulated GPUs unless FLOCKML_CUDA_SIM_DEVICES says
 * otherwise, freed device memory poisoned, NCCL from the same addon); test/sim/ runs only then.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { simSuites, simWaiting } from './sim_suites';

const root = join(__dirname);
const args = process.argv.slice(2);
const gpuOnly = args.includes('--gpu');
const simOnly = args.includes('--sim');
if (simOnly) {
  process.env.FLOCKML_NATIVE ??= 'build-sim/sim/flockml.node';
  process.env.FLOCKML_CUDA_SIM_DEVICES ??= '4';
  // Freed device memory is filled with NaN too, so a kernel reading a buffer after its
  // stream-ordered free shows up.
  process.env.FLOCKML_CUDA_SIM_POISON ??= '1';
  // The simulator's addon exports the NCCL symbols itself (sim/nccl_api.cc).
  process.env.FLOCKML_NCCL_PATH ??= resolve(root, '..', process.env.FLOCKML_NATIVE);
}
const filters = args.filter((a) => !a.startsWith('--'));

function find(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const inRepo = (f: string) => relative(join(root, '..'), f);
const files = find(root)
  .filter((f) => !gpuOnly || relative(root, f).startsWith('gpu'))
  .filter((f) => (simOnly ? simSuites.some((s) => inRepo(f).startsWith(s)) : !inRepo(f).startsWith('test/sim/')))
  .filter((f) => filters.length === 0 || filters.some((flt) => f.includes(flt)))
  .sort();

if (simOnly) for (const [file, why] of Object.entries(simWaiting)) console.log(`not on the simulator: ${file} (${why})`);

const tsx = join(root, '..', 'node_modules', '.bin', 'tsx');
let passed = 0;
let failed = 0;
for (const file of files) {
  const rel = relative(join(root, '..'), file);
  const started = Date.now();
  const env = { ...process.env, FORCE_COLOR: '0', ...(relative(root, file).startsWith('gpu') ? { FLOCKML_CUDA_POISON: '1' } : {}) };
  const r = spawnSync(tsx, [file], { encoding: 'utf8', env, maxBuffer: 64 << 20, timeout: 20 * 60_000 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const total = Number(/Total:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const ok = Number(/Passed:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const skipped = Number(/Skipped:\s+(\d+)/.exec(out)?.[1] ?? 0);
  let fileFailed = total - ok - skipped;
  if (r.status !== 0 && fileFailed === 0) fileFailed = 1; // crashed or exited non-zero outside a test
  if (total === 0 && r.status === 0) fileFailed = 1; // a file that ran no test is a failure
  passed += ok;
  failed += fileFailed;
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${fileFailed ? 'FAIL' : 'ok  '} ${rel}  (${ok}/${total} in ${secs}s${r.signal ? `, killed by ${r.signal}` : ''})`);
  if (fileFailed || process.env.FLOCKML_TEST_VERBOSE) console.log(out.replace(/^/gm, '    '));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
