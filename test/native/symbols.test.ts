/**
 * Every flock:: symbol the addon refers to is defined in it. Kernels declared in one translation
 * unit and instantiated in another (cpp/cpu/elementwise.h's per-dtype loops) link into a shared
 * library even when an instantiation is missing; the gap would only show when the call is first
 * bound, as a process-ending "symbol lookup error". nm over the loaded addon catches it here.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { loadAddon } from '../../lib/native_loader';

test('the addon leaves no flock:: symbol undefined', () => {
  const { source } = loadAddon();
  const r = spawnSync('nm', ['--dynamic', '--undefined-only', '--demangle', source.path], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.is(r.status, 0, r.stderr);
  const undefinedOwn = r.stdout.split('\n').filter((line) => line.includes('flock::'));
  assert.equal(undefinedOwn, []);
});

test('nm reads the addon: its defined symbols include the per-dtype unary loops', () => {
  const { source } = loadAddon();
  const r = spawnSync('nm', ['--demangle', '--defined-only', source.path], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.is(r.status, 0, r.stderr);
  for (const t of ['float', 'double', 'bf16', 'f16', 'int', 'long', 'unsigned char'])
    assert.ok(r.stdout.includes(`flock::cpu::unary_typed<${t === 'bf16' || t === 'f16' ? `flock::${t}` : t}>(`), t);
});

test.run();
