/**
 * MultiheadAttention's packed self-attention path (CPU, f32/bf16/f16: the fused kernel reading
 * heads in place from the [.., 3·embed] projection) against the same module in f64, which runs the
 * head-split path through scaledDotProductAttention: outputs and gradients of the input and of
 * every parameter, in both layouts, unbatched, with every mask kind and with dropout (the same
 * Philox mask on both paths).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import type { Tensor } from '../../lib';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

const { nn } = fl;

function pair(e: number, h: number, batchFirst: boolean, dropout = 0) {
  const lo = new nn.MultiheadAttention(e, h, { batchFirst, dropout });
  const hi = new nn.MultiheadAttention(e, h, { batchFirst, dropout, dtype: 'f64' });
  for (const p of lo.parameters()) fl.noGrad(() => p.copy_(fl.randn([...p.shape]).mul(0.3)));
  hi.loadStateDict(Object.fromEntries(Object.entries(lo.stateDict()).map(([k, v]) => [k, v.to('f64')])));
  return { lo, hi };
}

type Opts = Parameters<fl.nn.MultiheadAttention['forward']>[3];

/** Runs both modules on the same input; compares the output and the gradients of Σ w·out. */
function compare(e: number, h: number, batchFirst: boolean, shape: number[], opts: (dtype: fl.DType) => Opts, dropout = 0, tol = 2e-5) {
  const { lo, hi } = pair(e, h, batchFirst, dropout);
  const x64 = fl.randn(shape, { dtype: 'f64' });
  const xs = [x64.to('f32').requiresGrad_(), x64.clone().requiresGrad_()];
  const outs = [lo, hi].map((m, i) => {
    if (dropout > 0) fl.manualSeed(123);
    return m.forward(xs[i], xs[i], xs[i], { needWeights: false, ...opts(i === 0 ? 'f32' : 'f64') })[0];
  });
  assert.equal(outs[0].shape, outs[1].shape);
  close(values(outs[0]), values(outs[1]), tol, tol, 'out');
  const w = fl.randn([...outs[1].shape], { dtype: 'f64' });
  outs[0].mul(w.to('f32')).sum().backward();
  outs[1].mul(w).sum().backward();
  // Gradients are sums over every position (the key bias's cancels to 0 exactly): f32 absolute error grows with them.
  close(values(xs[0].grad as Tensor), values(xs[1].grad as Tensor), tol * 5, tol, 'grad input');
  const named = new Map(hi.namedParameters());
  for (const [name, p] of lo.namedParameters())
    close(values(p.grad as Tensor), values(named.get(name)?.grad as Tensor), tol * 10, tol * 5, `grad ${name}`);
}

fl.manualSeed(21);

for (const batchFirst of [true, false]) {
  test(`batchFirst ${batchFirst}: plain and causal, T across tile edges`, () => {
    for (const t of [1, 7, 33, 70]) {
      const shape = batchFirst ? [3, t, 24] : [t, 3, 24];
      compare(24, 3, batchFirst, shape, () => ({}));
      compare(24, 4, batchFirst, shape, () => ({ isCausal: true }));
    }
  });

  test(`batchFirst ${batchFirst}: bool and additive attnMask, 3-D mask, keyPaddingMask`, () => {
    const t = 19;
    const shape = batchFirst ? [2, t, 16] : [t, 2, 16];
    const bool = fl.rand([t, t]).gt(0.6);
    compare(16, 2, batchFirst, shape, () => ({ attnMask: bool }));
    const add = fl.randn([t, t]);
    compare(16, 2, batchFirst, shape, (dtype) => ({ attnMask: add.to(dtype) }));
    const perHead = fl.rand([2 * 4, t, t]).gt(0.5);
    compare(16, 4, batchFirst, shape, () => ({ attnMask: perHead }));
    const pad = fl.tensor(
      Uint8Array.from({ length: 2 * t }, (_, i) => Number(i % t > 12 && i >= t)),
      { dtype: 'bool', shape: [2, t] },
    );
    compare(16, 2, batchFirst, shape, () => ({ keyPaddingMask: pad, isCausal: true }));
  });
}

test('unbatched input and dropout (the same Philox mask as the head-split path)', () => {
  compare(12, 3, true, [9, 12], () => ({ isCausal: true }));
  compare(16, 2, true, [2, 21, 16], () => ({}), 0.3);
  compare(16, 2, false, [21, 2, 16], () => ({ isCausal: true }), 0.3);
});

test('bf16 runs packed under autocast, close to f32', () => {
  const m = new nn.MultiheadAttention(32, 4, { batchFirst: true });
  const x = fl.randn([2, 40, 32]);
  const ref = values(m.forward(x, x, x, { needWeights: false, isCausal: true })[0]);
  const low = fl.autocast({ dtype: 'bf16', device: 'cpu' }, () => m.forward(x, x, x, { needWeights: false, isCausal: true })[0]);
  assert.is(low.dtype, 'bf16');
  const got = values(low.to('f32'));
  const scale = Math.max(...ref.map(Math.abs));
  const err = Math.max(...got.map((v, i) => Math.abs(v - ref[i])));
  assert.ok(err < 0.03 * scale, `bf16 max error ${err}, output scale ${scale}`);
});

test.run();
