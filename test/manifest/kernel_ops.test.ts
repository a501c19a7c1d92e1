/**
 * Ops declared with a `kernel` (scripts/gen_kernel_ops.ts): their generated checks say the same in
 * TypeScript and in the native front end, each has its gradient formula registered, and the
 * generator refuses entries it cannot generate.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { manifest } from '../../lib/manifest/index';
import type { OpDecl } from '../../lib/manifest/types';
import { native } from '../../lib/native';
import { registeredGrads } from '../../lib/ops/grads/table';
import { kernelOpProblems, kernelOps } from '../../scripts/gen_kernel_ops';

const ops = kernelOps(manifest);

test('there are kernel ops, and every one with a formula has it registered', () => {
  assert.ok(ops.length >= 2, ops.map((o) => o.name).join(', '));
  const registered = new Set(registeredGrads());
  for (const o of ops) if (o.grad.kind === 'formula') assert.ok(registered.has(o.name), `${o.name}: no formula in lib/ops/grads/`);
});

test('a check fails with the same code and message from the function and from the native front end', () => {
  const x = fl.ones([3]);
  const fromTs = (() => {
    try {
      fl.tril(x);
    } catch (e) {
      return e as { code: string; message: string };
    }
    return undefined;
  })();
  const fromNative = (() => {
    try {
      (native as unknown as Record<string, (...a: unknown[]) => unknown>).tril(x.handle, 0);
    } catch (e) {
      return e as { code: string; message: string };
    }
    return undefined;
  })();
  assert.ok(fromTs && fromNative);
  assert.is(fromTs.code, 'ERR_SHAPE');
  assert.is(fromNative.code, fromTs.code);
  assert.is(fromNative.message, fromTs.message);
});

test('the generator refuses what it cannot generate', () => {
  const tril = manifest.find((o) => o.name === 'tril') as OpDecl;
  const bad: OpDecl[] = [
    { ...tril, name: 'a1', shape: 'reduce' },
    { ...tril, name: 'a2', args: [{ name: 'n', type: 'int' }] },
    { ...tril, name: 'a3', args: [...tril.args, { name: 'list', type: 'ints' }] },
    { ...tril, name: 'a4', family: 'composite' },
    { ...tril, name: 'a5', kernel: { fixed: { upper: 1 } } },
  ];
  const found = kernelOpProblems([...manifest, ...bad]);
  for (const name of ['a1', 'a2', 'a3', 'a4'])
    assert.ok(
      found.some((p) => p.startsWith(`${name}:`)),
      `${name}: ${JSON.stringify(found)}`,
    );
  assert.ok(
    found.some((p) => /kernel family triangular: its ops give different signatures/.test(p)),
    JSON.stringify(found),
  );
  assert.equal(kernelOpProblems(manifest), []);
});

test.run();
