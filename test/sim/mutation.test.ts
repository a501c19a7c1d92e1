/**
 * The mutation check: proof that the simulator's suites execute the CUDA kernels rather than pass
 * around them. Each mutant breaks one kernel on purpose in a copy under build-sim/sim_mutant/ (the
 * element-wise binary kernel reads the wrong element; the SIMT GEMM stages its A tile one row off),
 * links it with everything else unchanged into build-sim/sim_mutant/flockml.node, and runs the GPU
 * conformance suite and the op harness's CUDA cases for the broken ops on it: they must fail,
 * naming a broken op.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const repo = join(__dirname, '..', '..');
const dir = join(repo, 'build-sim', 'sim_mutant');

interface Mutant {
  name: string;
  file: 'elementwise.cu' | 'gemm.cu';
  from: string;
  to: string;
  /** The harness ops to run against it; a failure must name one of them. */
  ops: string[];
}

const mutants: Mutant[] = [
  {
    name: 'element-wise binary kernel reads the neighbour of b',
    file: 'elementwise.cu',
    from: 'int64_t off[2] = {i, i};',
    to: 'int64_t off[2] = {i, i > 0 ? i - 1 : i};',
    ops: ['add', 'sub', 'mul', 'div'],
  },
  {
    name: "SIMT GEMM stages A's tile one row off",
    file: 'gemm.cu',
    from: '[&](int kk, int i, bool, T v) { As[kk][i] = v; }',
    to: '[&](int kk, int i, bool, T v) { As[kk][i ^ 1] = v; }',
    ops: ['matmul', 'linear', 'bmm'],
  },
];

/** Writes `name` into build-sim/sim_mutant/, mutated or not; only when it changes, so builds stay incremental. */
function place(file: string, text: string): void {
  const path = join(dir, file);
  if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
}

function build(): void {
  const cmakeJs = join(repo, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  const r = spawnSync(process.execPath, [cmakeJs, 'build', '--target', 'flockml_sim_mutant', '--out', 'build-sim', '--parallel', '2'], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 900_000,
  });
  assert.is(r.status, 0, `building the mutant failed:\n${r.stdout}${r.stderr}`);
}

for (const m of mutants) {
  test(`mutant: ${m.name} — the GPU conformance suite fails`, () => {
    mkdirSync(dir, { recursive: true });
    for (const f of ['elementwise.cu', 'gemm.cu'] as const) {
      const original = readFileSync(join(repo, 'cuda', f), 'utf8');
      if (f !== m.file) {
        place(f, original);
        continue;
      }
      assert.ok(original.includes(m.from), `cuda/${f} no longer contains the mutated line "${m.from}": update the mutant`);
      place(f, original.replace(m.from, m.to));
    }
    build();
    const env = { ...process.env, FLOCKML_NATIVE: join(dir, 'flockml.node'), FLOCKML_CUDA_POISON: '1', FLOCKML_CUDA_SIM_DEVICES: '1' };
    const out = ['test/gpu/conformance.test.ts', 'test/ops/harness/harness.test.ts']
      .map((file) => {
        const r = spawnSync(join(repo, 'node_modules', '.bin', 'tsx'), [join(repo, file)], {
          encoding: 'utf8',
          env: { ...env, FLOCKML_HARNESS_OPS: m.ops.join(',') },
          timeout: 600_000,
        });
        return `${r.stdout}${r.stderr}`;
      })
      .join('\n');
    const failures = out.split('\n').filter((l) => /^\s*FAIL\s/.test(l));
    assert.ok(failures.length > 0, `the suites passed with the kernel broken:\n${out}`);
    assert.ok(
      failures.some((l) => m.ops.some((op) => l.includes(`"${op}`))),
      `no failure names one of ${m.ops.join(', ')}:\n${failures.join('\n')}`,
    );
  });
}

test.run();
