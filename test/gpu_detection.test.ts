/**
 * GPU test files fail, not skip, when nvidia-smi lists a GPU that flockml cannot see: each GPU file
 * runs with a stand-in nvidia-smi first on PATH that lists one (this machine's addon sees none).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../lib/index';

const tsx = join(__dirname, '..', 'node_modules', '.bin', 'tsx');
const bin = mkdtempSync(join(tmpdir(), 'flockml-fake-smi-'));

function runWith(listing: string | null, file: string): { status: number | null; out: string } {
  rmSync(join(bin, 'nvidia-smi'), { force: true });
  if (listing !== null) {
    writeFileSync(join(bin, 'nvidia-smi'), `#!/bin/sh\nprintf '%s\\n' '${listing}'\n`);
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
  }
  const PATH = listing === null ? '/usr/bin:/bin' : `${bin}:${process.env.PATH}`;
  const r = spawnSync(tsx, [join(__dirname, file)], { encoding: 'utf8', env: { ...process.env, PATH, FORCE_COLOR: '0' } });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test.after(() => rmSync(bin, { recursive: true, force: true }));

if (fl.cuda.isAvailable()) {
  test('a CUDA device is visible, so the GPU files run for real (nothing to simulate)', () => {
    assert.ok(fl.cuda.deviceCount() > 0);
  });
} else {
  for (const file of ['gpu/conformance.test.ts', 'gpu/grad_norm.test.ts', 'gpu/nn_conformance.test.ts']) {
    test(`${file} fails when nvidia-smi lists a GPU the addon cannot see`, () => {
      const r = runWith('GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)', file);
      assert.is.not(r.status, 0, r.out);
      assert.match(r.out, /nvidia-smi lists GPU 0: NVIDIA H100 .* but flockml sees no CUDA device/);
    });
  }
  test('with no nvidia-smi (no GPU machine) the GPU files skip cleanly and pass', () => {
    const r = runWith(null, 'gpu/grad_norm.test.ts');
    assert.is(r.status, 0, r.out);
    assert.match(r.out, /GPU gradient norm: skipped, no CUDA device on this machine/);
  });
}

test.run();
