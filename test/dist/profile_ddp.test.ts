/** Collectives in the profiler's trace: a DDP step on 2 ring ranks, each rank's trace merged by the CLI. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChromeTrace } from '../../lib/profiler/trace';
import { expectAllOk, runRanks, tsNode } from './harness';

test('each rank records its allreduces with their bytes; the merged trace has one process per rank', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flockml-trace-'));
  try {
    expectAllOk(await runRanks('profile_ddp.ts', 2, { args: [dir], timeoutMs: 30_000 }).done);
    const out = join(dir, 'trace.json');
    const cli = join(__dirname, '..', '..', 'lib', 'cli', 'main.ts');
    const r = spawnSync(
      tsNode[0],
      [...tsNode.slice(1), cli, 'trace', 'merge', join(dir, 'trace.rank0.json'), join(dir, 'trace.rank1.json'), '-o', out],
      {
        encoding: 'utf8',
      },
    );
    assert.is(r.status, 0, r.stderr);
    const merged = JSON.parse(readFileSync(out, 'utf8')) as ChromeTrace;
    const names = merged.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name');
    assert.equal([...new Set(names.map((e) => e.pid))].sort(), [0, 1]);
    for (const rank of [0, 1]) {
      const allreduces = merged.traceEvents.filter((e) => e.pid === rank && e.cat === 'comm' && e.name === 'allReduce');
      assert.ok(allreduces.length > 0, `rank ${rank} has no allReduce event`);
      const bytes = allreduces.map((e) => Number((e.args as { bytes?: number }).bytes));
      assert.ok(
        bytes.every((b) => b > 0),
        JSON.stringify(allreduces),
      );
      // The gradients of Linear(16, 32) and Linear(32, 4), f32: every byte is reduced once.
      assert.is(
        bytes.reduce((a, b) => a + b, 0),
        (16 * 32 + 32 + 32 * 4 + 4) * 4,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
