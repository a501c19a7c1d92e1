/**
 * Reruns uvu test files in a child tsx process with extra environment (a forced instruction set,
 * a forced convolution path) and asserts every test in them passed — at least one ran.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as assert from 'uvu/assert';

export const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/** Runs tsx with `args` under `env` added to this process's environment, from the repository root. */
export function runTsx(env: Record<string, string>, args: string[]) {
  return spawnSync(tsx, args, { cwd: root, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0', ...env }, maxBuffer: 16 << 20 });
}

/** Asserts `file` (absolute, or relative to the root) passes every one of its tests under `env`. */
export function assertFilePasses(file: string, env: Record<string, string>): void {
  const r = runTsx(env, [file]);
  const out = `${r.stdout}${r.stderr}`;
  const total = Number(/Total:\s+(\d+)/.exec(out)?.[1] ?? 0),
    passed = Number(/Passed:\s+(\d+)/.exec(out)?.[1] ?? -1);
  assert.ok(r.status === 0 && total > 0 && passed === total, `${file} under ${JSON.stringify(env)}:\n${out.slice(-3000)}`);
}
