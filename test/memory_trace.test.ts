/** Allocation tracing (FLOCKML_TRACE_ALLOC=1): snapshots by creation site, and tensors only the garbage collector freed. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as fl from '../lib/index';
import type { AllocationSite } from '../lib/index';

const FIXTURE = 'test/memory_trace_fixture.ts';
const source = readFileSync(FIXTURE, 'utf8').split('\n');
const siteOf = (marker: string) => `${FIXTURE}:${source.findIndex((l) => l.includes(`// site: ${marker}`)) + 1}`;

interface Result {
  snapshot: AllocationSite[];
  leaks: AllocationSite[];
}

function run(env: NodeJS.ProcessEnv, flags: string[] = []): { result: Result; stderr: string } {
  const r = spawnSync(process.execPath, [...flags, '--import', 'tsx', FIXTURE], { encoding: 'utf8', env: { ...process.env, ...env } });
  assert.is(r.status, 0, r.stderr);
  return { result: JSON.parse(r.stdout.trim().split('\n').pop()!) as Result, stderr: r.stderr };
}

const traced = run({ FLOCKML_TRACE_ALLOC: '1' }, ['--expose-gc']);

test('the snapshot groups live tensors by the line that created them, largest first', () => {
  const { snapshot } = traced.result;
  assert.equal(snapshot[0], { site: siteOf('kept'), device: 'cpu', tensors: 3, bytes: 3 * 256 * 4 });
  assert.equal(
    snapshot.find((s) => s.site === siteOf('small')),
    { site: siteOf('small'), device: 'cpu', tensors: 1, bytes: 16 },
  );
  for (let i = 1; i < snapshot.length; i++) assert.ok(snapshot[i - 1].bytes >= snapshot[i].bytes);
});

test('tensors dropped without dispose are reported with the line that leaked them, disposed and tidied ones are not', () => {
  const { leaks } = traced.result;
  const leaked = leaks.find((s) => s.site === siteOf('leaked'));
  assert.ok(leaked, JSON.stringify(leaks));
  assert.ok(leaked.tensors > 0 && leaked.tensors <= 20);
  assert.is(leaked.bytes, leaked.tensors * 64 * 4);
  for (const s of ['disposed', 'tidied', 'kept', 'small'])
    assert.not.ok(
      leaks.some((l) => l.site === siteOf(s)),
      s,
    );
});

test('at exit the finalizer-freed tensors are printed to stderr by site', () => {
  assert.match(traced.stderr, /tensors? freed by the garbage collector, never disposed/);
  assert.ok(traced.stderr.includes(siteOf('leaked')), traced.stderr);
});

test('off by default: empty snapshot and leak list, nothing printed', () => {
  const { result, stderr } = run({ FLOCKML_TRACE_ALLOC: '' }, ['--expose-gc']);
  assert.equal(result.snapshot, []);
  assert.equal(result.leaks, []);
  assert.is(stderr, '');
  if (process.env.FLOCKML_TRACE_ALLOC !== '1') assert.equal(fl.memorySnapshot(), []);
});

test.run();
