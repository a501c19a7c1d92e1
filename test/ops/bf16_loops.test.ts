/**
 * The bf16 element-wise loops compiled per instruction set (cpp/cpu/elementwise.cc, unary_bf16.cc
 * and binary_bf16.cc with cpp/cpu/bf16_vec.h): f32 <-> bf16 casts bit for bit against a plain-JS round-to-nearest-even
 * (ties, subnormals, NaN payloads, overflow to inf), and bf16 unary ops, their derivatives and
 * same-shape binary ops against the same op computed in f32 and rounded once — which is what the
 * scalar bf16 path computes. Lengths straddle the 16-lane blocks and the 512-value chunks. The
 * parent run also repeats the checks in child processes under every instruction set this CPU has
 * (FLOCKML_CPU_ISA) and with VCVTNEPS2BF16 turned off (FLOCKML_CPU_BF16=0), and compares the bits.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const F = fl.nn.functional;

/** The bf16 bits of a bf16 tensor. */
function bits(t: fl.Tensor): number[] {
  assert.is(t.dtype, 'bf16');
  return Array.from(new Uint32Array((t.dataSync() as Float32Array).buffer), (u) => u >>> 16);
}

/** An f32 tensor holding exactly these bit patterns. */
function fromBits(u: Uint32Array): fl.Tensor {
  return fl.tensor(new Float32Array(u.buffer), { dtype: 'f32' });
}

/** f32 bits -> bf16 bits, round to nearest even, NaN quieted (the bf16 type in cpp/dtype.h). */
function refRound(u: number): number {
  if ((u & 0x7fffffff) >>> 0 > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Special patterns, then pseudo-random ones (every exponent, subnormals included). */
function patterns(n: number, seed: number): Uint32Array {
  const special = [
    0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00001, 0xffc12345, 0x7f800001, 0x00000001, 0x807fffff, 0x007f8000, 0x00008000,
    0x00018000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff, 0xff7f8000, 0x7f7f7fff, 0x3f7fffff, 0x0080_0000,
  ];
  const out = new Uint32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    // Every 7th value a special one, so they land at every position of a 16-lane block.
    out[i] = i % 7 === 3 ? special[((i / 7) % special.length) | 0] : s;
  }
  return out;
}

const lengths = [1, 15, 16, 17, 511, 512, 513, 1000, 70001];

for (const n of lengths) {
  test(`f32 -> bf16 -> f32 casts of ${n} values are bit-exact`, () => {
    const u = patterns(n, n);
    const b = fromBits(u).to('bf16');
    const got = bits(b);
    for (let i = 0; i < n; i++) if (got[i] !== refRound(u[i])) assert.unreachable(`${i}: ${u[i].toString(16)} -> ${got[i].toString(16)}`);
    const back = new Uint32Array((b.to('f32').dataSync() as Float32Array).buffer);
    for (let i = 0; i < n; i++) if (back[i] !== (got[i] << 16) >>> 0) assert.unreachable(`widen ${i}`);
  });
}

/** Finite, moderate values (with a few specials) as bf16. */
function values(n: number, seed: number): fl.Tensor {
  fl.manualSeed(seed);
  const x = fl.randn([n]).mul(3);
  const v = x.dataSync() as Float32Array;
  v[0] = 0;
  if (n > 5) {
    v[3] = Number.NaN;
    v[4] = -0;
    v[5] = Number.POSITIVE_INFINITY;
  }
  return fl.tensor(v, { dtype: 'f32' }).to('bf16');
}

const unary: [string, (t: fl.Tensor) => fl.Tensor][] = [
  ['relu', (t) => t.relu()],
  ['gelu', (t) => F.gelu(t)],
  ['tanh', (t) => t.tanh()],
  ['sigmoid', (t) => t.sigmoid()],
  ['exp', (t) => t.exp()],
  ['neg', (t) => t.neg()],
  ['square', (t) => t.square()],
];

for (const n of [17, 513, 4099]) {
  test(`bf16 unary ops and their gradients over ${n} values: the f32 result rounded once`, () => {
    const x = values(n, n);
    const gy = values(n, n + 1);
    for (const [name, f] of unary) {
      // The f32 kernels round the same way on every ISA (no FMA contraction), so the f32 result
      // rounded to bf16 is the scalar bf16 path's answer.
      assert.equal(bits(f(x)), bits(f(x.to('f32')).to('bf16')), `${name} forward`);
      const xb = x.detach().requiresGrad_();
      f(xb).backward(gy);
      const xf = x.to('f32').requiresGrad_();
      f(xf).backward(gy.to('f32'));
      assert.equal(bits(xb.grad!), bits(xf.grad!.to('bf16')), `${name} backward`);
    }
  });

  test(`bf16 same-shape binary ops over ${n} values: the f32 result rounded once`, () => {
    const a = values(n, 2 * n);
    const b = values(n, 2 * n + 1);
    const ops: [string, (p: fl.Tensor, q: fl.Tensor) => fl.Tensor][] = [
      ['add', (p, q) => p.add(q)],
      ['sub', (p, q) => p.sub(q)],
      ['mul', (p, q) => p.mul(q)],
      ['div', (p, q) => p.div(q)],
      ['maximum', (p, q) => fl.maximum(p, q)],
    ];
    for (const [name, f] of ops) assert.equal(bits(f(a, b)), bits(f(a.to('f32'), b.to('f32')).to('bf16')), name);
  });
}

/** sha256 of the bits of casts, unary ops, a ReLU gradient and binary ops on bf16. */
function digest(): string {
  const h = createHash('sha256');
  const u = patterns(70001, 5);
  const x = values(4099, 7),
    y = values(4099, 8);
  const xr = x.detach().requiresGrad_();
  xr.relu().backward(y);
  for (const t of [fromBits(u).to('bf16'), x.relu(), F.gelu(x), x.tanh(), xr.grad!, x.add(y), x.mul(y), x.div(y)])
    h.update(new Uint8Array((t.dataSync() as Float32Array).buffer));
  return h.digest('hex');
}

if (!process.env.FLOCKML_BF16_LOOPS_DIGEST) {
  test('every instruction set, with and without VCVTNEPS2BF16, gives the same bits', () => {
    const root = join(__dirname, '..', '..');
    const tsx = join(root, 'node_modules', '.bin', 'tsx');
    const mine = digest();
    const isas = ['generic', 'avx2', 'avx512'];
    const detected = fl.buildInfo().cpuIsaDetected as string;
    const runs: Record<string, string>[] = isas.slice(0, isas.indexOf(detected) + 1).map((isa) => ({ FLOCKML_CPU_ISA: isa }));
    if (detected === 'avx512') runs.push({ FLOCKML_CPU_ISA: 'avx512', FLOCKML_CPU_BF16: '0' });
    for (const env of runs) {
      const script = `const { digest } = require(${JSON.stringify(__filename)}); console.log(digest());`;
      const r = spawnSync(tsx, ['-e', script], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, ...env, FLOCKML_BF16_LOOPS_DIGEST: '1' },
      });
      assert.is(r.stdout.trim().split('\n').pop(), mine, `${JSON.stringify(env)}: ${r.stderr.slice(-2000)}`);
    }
  });
}

export { digest };

if (!process.env.FLOCKML_BF16_LOOPS_DIGEST) test.run();
