/**
 * The op manifest against the code it derives: the committed op-code files equal what
 * scripts/gen_ops.ts generates now, and the manifest names only kernel families and binding
 * exports that exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kernelCodes, manifest, type OpDecl } from '../../lib/ops/manifest/index';
import { ENUMS, ROOT, bindingExports, collectCodes, declaredExports, generate, kernelFamilies, problems } from '../../scripts/gen_ops';

test('the committed op-code files are what the manifest generates', () => {
  for (const [path, text] of generate()) {
    const committed = readFileSync(join(ROOT, path), 'utf8');
    if (committed !== text) {
      const a = committed.split('\n'),
        b = text.split('\n');
      const i = a.findIndex((l, k) => l !== b[k]);
      assert.unreachable(`${path} differs from the manifest at line ${i + 1}: '${a[i]}' vs generated '${b[i]}'; run npm run gen:ops`);
    }
  }
});

test('the manifest is consistent with the kernels and the bindings', () => {
  assert.equal(problems(), []);
});

test('every op has a name, a family, dtypes, a shape rule and an autocast policy', () => {
  assert.ok(manifest.length > 100, `only ${manifest.length} ops declared`);
  for (const o of manifest) {
    assert.ok(/^[A-Za-z_.]+[A-Za-z0-9_]*$/.test(o.name), `bad name ${o.name}`);
    assert.ok(o.family.length > 0 && o.shape.length > 0, o.name);
    for (const [dev, list] of Object.entries(o.dtypes)) assert.ok(list && list.length > 0, `${o.name}: empty dtypes on ${dev}`);
  }
});

test('the checks catch a missing kernel family, a duplicate op and an unknown code family', () => {
  const base = manifest.find((o) => o.name === 'exp') as OpDecl;
  const bad: OpDecl[] = [
    { ...base, name: 'noKernel', family: 'no_such_kernel', code: undefined },
    { ...base, name: 'exp' },
    { ...base, name: 'odd', family: 'matmul', code: 'odd' },
    { ...base, name: 'gradOf', grad: { kind: 'formula', inputs: ['nope'] } },
  ];
  const found = problems([...manifest, ...bad], kernelCodes);
  for (const want of [
    /noKernel: kernel family 'no_such_kernel'/,
    /exp: declared twice/,
    /odd: code 'odd' given/,
    /gradOf: gradient input 'nope'/,
  ])
    assert.ok(
      found.some((p) => want.test(p)),
      `${want} not among ${JSON.stringify(found)}`,
    );
});

test('a new family file declaring a code extends that enum, after the existing codes', () => {
  const extra: OpDecl = {
    name: 'isnan',
    family: 'unary',
    code: 'isnan',
    args: [{ name: 'input', type: 'tensor' }],
    dtypes: { cpu: ['f32'] },
    shape: 'same',
    grad: { kind: 'none' },
    autocast: 'none',
    output: 'bool',
  };
  const before = collectCodes(manifest, kernelCodes).get('unary') ?? [];
  const after = collectCodes([...manifest, extra], kernelCodes).get('unary') ?? [];
  // The ops' codes keep their places, the new one follows them, the kernel-only codes come last.
  const declared = before.filter((c) => !kernelCodes.some((k) => k.family === 'unary' && k.code === c));
  assert.equal(after.slice(0, declared.length), declared);
  assert.is(after[declared.length], 'isnan');
  assert.equal(after.slice(declared.length + 1), before.slice(declared.length));
  assert.ok(after.includes('isnan'));
  const header = generate([...manifest, extra], kernelCodes).get('cpp/generated/op_codes.h') ?? '';
  assert.match(header, /\n {2}isnan,\n/);
  assert.match(header, /"isnan",/);
  const ts = generate([...manifest, extra], kernelCodes).get('types/op_codes.ts') ?? '';
  assert.match(ts, /'isnan'/);
});

test('binary_is_comparison follows the manifest (bool results), not the enum order', () => {
  const header = generate().get('cpp/generated/op_codes.h') ?? '';
  const body = header.slice(header.indexOf('binary_is_comparison'));
  for (const c of ['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logical_and', 'logical_or']) assert.match(body, new RegExp(`case BinaryOp::${c}:`));
  for (const c of ['add', 'pow', 'maximum']) assert.not.match(body, new RegExp(`case BinaryOp::${c}:`));
});

test('each enumerated family has a kernel family and the bindings declare what they export', () => {
  const fams = kernelFamilies();
  for (const e of ENUMS) assert.ok(fams.has(e.family), `${e.family} has no FLOCK_DECLARE_KERNEL`);
  const declared = declaredExports();
  assert.ok(bindingExports().size > 50);
  for (const name of ['unary', 'binary', 'reduce', 'biasAct', 'conv2d', 'ioSave']) assert.ok(declared.has(name), name);
});

test.run();
