import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';
import { native } from '../../lib/native';
import { wrap } from '../../lib/ops/util';

/**
 * bf16 matmul (AVX512_BF16 where the CPU has it, else widened to f32): each result must be the
 * f32 product of the same bf16 values rounded once to bf16, up to the order of the f32 sums.
 */
const shapes: Array<[number[], number[]]> = [
  [
    [1, 1],
    [1, 1],
  ],
  [
    [7, 13],
    [13, 5],
  ],
  [
    [33, 64],
    [64, 17],
  ],
  [
    [3, 9, 31],
    [3, 31, 40],
  ],
  [
    [100, 257],
    [257, 70],
  ],
];

for (const [sa, sb] of shapes) {
  test(`bf16 matmul ${sa} @ ${sb} (${native.buildInfo().bf16gemm})`, () => {
    fl.manualSeed(sa[0] * 31 + sb[sb.length - 1]);
    const a = fl.randn(sa).to('bf16'),
      b = fl.randn(sb).to('bf16');
    const got = fl.matmul(a, b).to('f32');
    const want = fl.matmul(a.to('f32'), b.to('f32'));
    const err = got.sub(want).abs().div(want.abs().add(1)).max().itemSync();
    assert.ok(err <= 2 ** -7, `relative error ${err}`);
  });
}

// 11 outputs fill no 32-column panel of B; 45 fill one whole panel (both halves) and part of another.
for (const [rows, outs, ins] of [
  [19, 11, 23],
  [37, 45, 71],
])
  test(`bf16 matmul with transposed operands (the gradients of linear ${rows}x${ins} -> ${outs})`, () => {
    const x = fl.randn([rows, ins]).to('bf16').requiresGrad_();
    const w = fl.randn([outs, ins]).to('bf16').requiresGrad_();
    const y = fl.nn.functional.linear(x, w);
    y.backward(fl.ones([rows, outs]).to('bf16'));
    const xf = x.detach().to('f32').requiresGrad_(),
      wf = w.detach().to('f32').requiresGrad_();
    fl.nn.functional.linear(xf, wf).backward(fl.ones([rows, outs]));
    for (const [g, r] of [
      [x.grad, xf.grad],
      [w.grad, wf.grad],
    ] as const) {
      const err = (g as fl.Tensor)
        .to('f32')
        .sub(r as fl.Tensor)
        .abs()
        .div((r as fl.Tensor).abs().add(1))
        .max()
        .itemSync();
      assert.ok(err <= 2 ** -7, `relative error ${err}`);
    }
  });

test('buildInfo says which bf16 matmul path runs', () => {
  assert.ok(['avx512_bf16', 'f32-widen'].includes(native.buildInfo().bf16gemm));
});

// matmulLowered: f32 operands rounded to bf16 inside the GEMM (or by cast kernels where the CPU has
// no AVX512_BF16) give exactly what casting them first gives, for every layout the GEMM packs; an
// f32 result is the bf16 result widened.
for (const [m, k, n] of [
  [1, 1, 1],
  [9, 7, 33],
  [100, 784, 128],
  [17, 64, 70],
])
  for (const ta of [false, true])
    for (const tb of [false, true])
      test(`matmulLowered ${m}x${k}x${n}${ta ? ' Aᵀ' : ''}${tb ? ' Bᵀ' : ''}: the values of cast, matmul, cast`, () => {
        fl.manualSeed(m * 7 + n);
        const a = fl.randn(ta ? [k, m] : [m, k]).mul(3),
          b = fl.randn(tb ? [n, k] : [k, n]);
        const want = wrap(native.matmul(a.to('bf16').handle, b.to('bf16').handle, ta, tb));
        for (const [x, y] of [
          [a, b],
          [a.to('bf16'), b],
          [a, b.to('bf16')],
        ])
          for (const out of ['bf16', 'f32'] as const) {
            const got = wrap(native.matmulLowered(x.handle, y.handle, ta, tb, 'bf16', out));
            assert.is(got.dtype, out);
            assert.equal(values(got), values(want), `${x.dtype} @ ${y.dtype} -> ${out}`);
          }
      });

test('matmulLowered checks its dtypes', () => {
  const a = fl.randn([2, 3]),
    b = fl.randn([3, 2]);
  for (const [x, y, compute, out] of [
    [a, b.to('f64'), 'bf16', 'bf16'],
    [a, b, 'f32', 'f32'],
    [a, b, 'bf16', 'i64'],
    [a.to('f16'), b, 'bf16', 'bf16'],
  ] as const)
    assert.throws(
      () => native.matmulLowered(x.handle, y.handle, false, false, compute, out),
      (e: { code?: string; message?: string }) => e.code === 'ERR_DTYPE' && /matmul/.test(e.message ?? ''),
    );
});

test.run();
