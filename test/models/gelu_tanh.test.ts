/** geluTanh (GPT-2's MLP over many rows) is the tanh GELU: values and gradients against gelu(h, 'tanh'). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { gelu } from '../../lib/ops/elementwise';
import { geluTanh } from '../../lib/models/gelu_tanh';

const worst = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  return w;
};

test("values and gradients equal gelu(h, 'tanh') within f32 rounding, saturated ends included", () => {
  const h = fl.linspace(-12, 12, 4001);
  const grad = (f: (x: fl.Tensor) => fl.Tensor) => {
    const x = h.detach().requiresGrad_();
    const y = f(x);
    y.sum().backward();
    return [y.dataSync() as Float32Array, x.grad!.dataSync() as Float32Array];
  };
  const [want, wantGrad] = grad((x) => gelu(x, 'tanh'));
  const [got, gotGrad] = grad(geluTanh);
  assert.ok(worst(got, want) < 1e-6, `values differ by ${worst(got, want)}`);
  assert.ok(worst(gotGrad, wantGrad) < 1e-5, `gradients differ by ${worst(gotGrad, wantGrad)}`);
  assert.ok(Array.from(got).every(Number.isFinite) && Array.from(gotGrad).every(Number.isFinite));
});

test('GPT-2 logits over many rows (the sigmoid form) equal those of few rows at a time (the fused kernel)', () => {
  fl.manualSeed(3);
  const m = new fl.models.GPT2({ vocab_size: 64, n_positions: 32, n_embd: 32, n_layer: 2, n_head: 4 });
  const ids = fl.randint(0, 64, [3, 12], { dtype: 'i64' });
  const whole = fl.noGrad(() => m.forward(ids)).dataSync() as Float32Array;
  const rows = [0, 1, 2].flatMap((r) => Array.from(fl.noGrad(() => m.forward(ids.narrow(0, r, 1))).dataSync() as Float32Array));
  assert.ok(worst(whole, rows) < 1e-5, `logits differ by ${worst(whole, rows)}`);
});

test.run();
