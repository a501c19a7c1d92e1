/** Trace files: merging per-rank traces, by function and by `flockml trace merge`. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../../lib/index';
import type { ChromeTrace } from '../../lib/profiler/index';
import { expectError } from '../helpers/reference';

const dir = mkdtempSync(join(tmpdir(), 'flockml-trace-'));

async function rankTrace(rank: number): Promise<string> {
  const a = fl.randn([16, 16]);
  const p = await fl.profiler.profile({ rank }, () => {
    a.add(a).dispose();
    return fl.sync();
  });
  a.dispose();
  const path = join(dir, `rank${rank}.json`);
  p.exportChromeTrace(path);
  return path;
}

test('flockml trace merge: one process per rank, every event kept', async () => {
  const a = await rankTrace(0);
  const b = await rankTrace(1);
  const out = join(dir, 'merged.json');
  const line = execFileSync(process.execPath, ['--import', 'tsx', 'lib/cli/main.ts', 'trace', 'merge', a, b, '-o', out], {
    encoding: 'utf8',
  });
  assert.is(JSON.parse(line.trim()).processes, 2);
  const merged = JSON.parse(readFileSync(out, 'utf8')) as ChromeTrace;
  const count = (p: string) => (JSON.parse(readFileSync(p, 'utf8')) as ChromeTrace).traceEvents.length;
  assert.is(merged.traceEvents.length, count(a) + count(b));
  const names = merged.traceEvents.filter((e) => e.name === 'process_name').map((e) => [e.pid, (e.args as { name: string }).name]);
  assert.equal(names, [
    [0, 'rank 0'],
    [1, 'rank 1'],
  ]);
});

test('mergeTraces moves a repeated pid to the next free one', () => {
  const t: ChromeTrace = {
    displayTimeUnit: 'ms',
    traceEvents: [
      { name: 'process_name', ph: 'M', pid: 0, tid: 0, ts: 0, args: { name: 'rank 0' } },
      { name: 'x', ph: 'X', pid: 0, tid: 2, ts: 1, dur: 1 },
    ],
  };
  const m = fl.profiler.mergeTraces([t, t]);
  assert.equal([...new Set(m.traceEvents.map((e) => e.pid))], [0, 1]);
  assert.is((m.traceEvents[2].args as { name: string }).name, 'rank 1');
});

test('readTrace rejects what is not a trace', () => {
  const p = join(dir, 'bad.json');
  writeFileSync(p, '{"a":1}');
  expectError(() => fl.profiler.readTrace(p), Error, 'ERR_FORMAT');
  expectError(() => fl.profiler.readTrace(join(dir, 'missing.json')), Error, 'ERR_IO');
});

test.run();
