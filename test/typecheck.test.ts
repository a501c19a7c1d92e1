/**
 * The TypeScript a user writes against flockml type-checks: the library, and the examples, benches
 * and tests written against its public types (tsconfig.check.json, strict).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

test('lib, examples, bench and test type-check with no errors', () => {
  const root = join(__dirname, '..');
  const r = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.check.json')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
});

test.run();
