/**
 * The op manifest against the code it derives: the committed op-code files equal what
 * scripts/gen_ops.ts generates now, and the manifest names only kernel families and binding
 * exports that exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kernelCodes, manifest, type OpDecl } from '../../lib/manifest/index';
import { ENUMS, ROOT, bindingExports, collectCodes, declaredExports, generate, kernelFamilies, problems } from '../../scripts/gen_ops';
import { WRAPPER_OUTPUTS, callShape } from '../../scripts/gen_wrappers';

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
    name: 'trunc',
    family: 'unary',
    code: 'trunc',
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
  assert.is(after[declared.length], 'trunc');
  assert.equal(after.slice(declared.length + 1), before.slice(declared.length));
  assert.ok(after.includes('trunc'));
  const header = generate([...manifest, extra], kernelCodes).get('cpp/generated/unary_codes.h') ?? '';
  assert.match(header, /\n {2}trunc,\n/);
  assert.match(header, /"trunc",/);
  const ts = generate([...manifest, extra], kernelCodes).get('types/op_codes.ts') ?? '';
  assert.match(ts, /'trunc'/);
});

test('binary_is_comparison follows the manifest (bool results), not the enum order', () => {
  const header = generate().get('cpp/generated/binary_codes.h') ?? '';
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

test('uniform element-wise ops get generated functions and methods; others keep their hand-written ones', () => {
  const decl = (name: string) => manifest.find((o) => o.name === name) as OpDecl;
  assert.equal(callShape(decl('exp')), { kind: 'unary', numbers: [] });
  assert.equal(callShape(decl('leakyRelu'))?.kind, 'unary');
  assert.equal(callShape(decl('eq')), { kind: 'compare' });
  assert.equal(callShape(decl('isnan')), { kind: 'predicate' });
  // gelu launches two codes, clamp takes tensor bounds, logicalAnd is marked custom, add has its own gradient.
  for (const name of ['gelu', 'clamp', 'logicalAnd', 'add', 'sum', 'matmul']) assert.is(callShape(decl(name)), null, name);
  const extra: OpDecl = {
    ...decl('exp'),
    name: 'trunc',
    code: 'trunc',
    autocast: 'none',
    method: true,
    doc: 'The integer part, toward zero.',
  };
  const files = generate([...manifest, extra], kernelCodes);
  const fns = files.get(WRAPPER_OUTPUTS.functions) ?? '';
  assert.match(
    fns,
    /\/\*\* The integer part, toward zero. \*\/\nexport function trunc\(input: Tensor\): Tensor \{\n {2}return unaryOp\('trunc', 'trunc', input\);\n\}/,
  );
  assert.match(fns, /export function exp\(input: Tensor\): Tensor \{\n {2}\[input\] = autocastArgs\('exp', input\);/);
  assert.match(fns, /return unaryOp\('neg', 'neg', input, 0, 0, true\);/);
  assert.match(fns, /checkNumber\('leakyRelu', 'negativeSlope', negativeSlope, \{ infinite: true \}\);/);
  const methods = files.get(WRAPPER_OUTPUTS.methods) ?? '';
  assert.match(methods, /\n {4}trunc\(\): Tensor;/);
  assert.match(methods, /\n {2}trunc\(\) \{\n {4}return ops\.trunc\(this\);/);
  assert.not.match(methods, /leakyRelu/, 'method: false');
});

test('a binary arithmetic op gets a generated function that takes its gradient from the formula table', () => {
  const mul = manifest.find((o) => o.name === 'mul') as OpDecl;
  assert.is(callShape(mul), null, 'mul is marked custom');
  const xy: OpDecl = { ...mul, name: 'xy', custom: undefined, autocast: 'f32' };
  const floatsOnly: OpDecl = { ...xy, name: 'xz', autocast: 'none', dtypes: { cpu: ['f32', 'f64'] } };
  assert.equal(callShape(xy), { kind: 'binary' });
  const files = generate([...manifest, xy, floatsOnly], kernelCodes);
  const fns = files.get(WRAPPER_OUTPUTS.binary) ?? '';
  assert.match(
    fns,
    /\[input, other\] = autocastArgs\('xy', input, other\);\n {2}return binaryOp\('xy', 'mul', input, other, binaryFormulas\.xy, false\);/,
  );
  assert.match(fns, /return binaryOp\('xz', 'mul', input, other, binaryFormulas\.xz, true\);/);
  assert.match(files.get(WRAPPER_OUTPUTS.methods) ?? '', /\n {2}xy\(other\) \{\n {4}return binary\.xy\(this, other\);/);
  assert.not.match(files.get(WRAPPER_OUTPUTS.functions) ?? '', /xy/);
});

test('an op generated and also written by hand in lib/ops is a problem', () => {
  const exp = manifest.find((o) => o.name === 'exp') as OpDecl;
  // lerp is written by hand in lib/ops/elementwise.ts; declared here as if it were a plain unary op.
  const others = manifest.filter((o) => o.name !== 'lerp');
  const found = problems([...others, { ...exp, name: 'lerp', code: 'exp' }], kernelCodes);
  assert.ok(
    found.some((p) => /lerp: its function is generated .* also written in lib\/ops\/elementwise.ts/.test(p)),
    JSON.stringify(found),
  );
  assert.equal(problems([...others, { ...exp, name: 'lerp', code: 'exp', custom: true }], kernelCodes), []);
});

test.run();
