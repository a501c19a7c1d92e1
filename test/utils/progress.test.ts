/** fl.utils.progress: redraws in place on a terminal, prints lines when piped, silent off rank 0. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';

const FIXTURE = 'test/utils/progress_fixture.ts';
const run = (env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', FIXTURE], { encoding: 'utf8', env: { ...process.env, ...env } });

test('piped: periodic log lines, no cursor movement', () => {
  const r = run();
  assert.is(r.status, 0, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('train:'));
  assert.ok(lines.length >= 2, r.stderr);
  assert.ok(!r.stderr.includes('\x1b['), 'no escape sequences off a terminal');
  assert.match(lines[lines.length - 1], /6\/6 \[/);
  assert.match(lines[lines.length - 1], /loss=0\.1667/);
  assert.match(r.stderr, /sync: .*3\/3/);
  assert.match(r.stdout, /sum 6/);
});

test('under a pseudo-terminal: the bar redraws in place on one line', () => {
  if (!existsSync('/usr/bin/script')) return; // util-linux's script makes the pty
  const r = spawnSync('/usr/bin/script', ['-q', '-e', '-c', `${process.execPath} --import tsx ${FIXTURE}`, '/dev/null'], {
    encoding: 'utf8',
  });
  assert.is(r.status, 0, r.stdout);
  const out = r.stdout;
  const train = out.slice(out.indexOf('train:'), out.indexOf('sync:'));
  assert.ok(train.split('\x1b[1G').length >= 3, 'redrawn from column 1');
  assert.is((train.match(/\n/g) ?? []).length, 1, 'one line for the whole bar');
  assert.match(train, /6\/6 .*loss=0\.1667/);
});

test('rank0Only: silent on other ranks, still iterates', () => {
  const r = run({ RANK: '1' });
  assert.is(r.status, 0, r.stderr);
  assert.ok(!r.stderr.includes('train:'));
  assert.match(r.stderr, /sync:/); // that bar is not rank0Only
  assert.match(r.stdout, /sum 6/);
});

test('total from length; options validated', () => {
  assert.is(fl.utils.progress([1, 2, 3], { stream: { write: () => true } as never }).total, 3);
  expectError(() => fl.utils.progress([1], { bogus: 1 } as never), TypeError, 'ERR_ARG');
  expectError(() => fl.utils.progress(5 as never), TypeError, 'ERR_ARG');
  expectError(() => fl.utils.progress([1], { desc: 3 as never }), TypeError, 'ERR_ARG');
});

test.run();
