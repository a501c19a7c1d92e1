/** The flockml command line's own surface: --version, --help, unknown commands and options, a missing script. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const cli = (...args: string[]) => {
  const r = spawnSync(tsx, [join(root, 'lib', 'cli', 'main.ts'), ...args], { encoding: 'utf8', cwd: root });
  return { status: r.status, out: r.stdout, err: r.stderr };
};

test('--version prints the package version on stdout', () => {
  const r = cli('--version');
  assert.is(r.status, 0, r.err);
  assert.is(r.out.trim(), JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
});

test('--help (and no command) prints the usage on stdout and exits 0', () => {
  for (const args of [['--help'], []]) {
    const r = cli(...args);
    assert.is(r.status, 0, r.err);
    assert.match(r.out, /^usage:/);
    assert.match(r.out, /flockml launch/);
    assert.is(r.err, '');
  }
});

test('an unknown command says so, with a guess, and exits 2', () => {
  const r = cli('lauch');
  assert.is(r.status, 2);
  assert.match(r.err, /unknown command 'lauch' \(did you mean 'launch'\?\)/);
});

test('launch: an unknown option gets "did you mean"; a missing script is one line, not a stack per rank', () => {
  const opt = cli('launch', '--nproc-per-nod', '2', 'x.ts');
  assert.is(opt.status, 2);
  assert.match(opt.err, /unknown option --nproc-per-nod \(did you mean --nproc-per-node\?\)/);
  const missing = cli('launch', '--nproc-per-node', '2', 'no-such-script.ts');
  assert.is(missing.status, 2);
  assert.is(missing.err.trim(), 'flockml: launch: no such script: no-such-script.ts');
});

test.run();
