/** Autocast on every CPU device: a region for device 'cpu' covers tensors on cpu:1 as on cpu:0 (the mirrored strategy's replicas). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { values } from '../helpers/values';

fl.setCpuDeviceCount(2); // before any tensor

test("autocast({ device: 'cpu' }) lowers linear and matmul on cpu:1 as on cpu:0, with the same values", () => {
  const F = fl.nn.functional;
  const x = fl.randn([4, 6]),
    w = fl.randn([3, 6]),
    b = fl.randn([3]);
  const outs = ['cpu:0', 'cpu:1'].map((d) =>
    fl.autocast({ device: 'cpu', dtype: 'bf16' }, () => {
      const y = F.linear(x.to(d), w.to(d), b.to(d));
      const m = fl.matmul(x.to(d), w.to(d).transpose(0, 1));
      return { y, m };
    }),
  );
  for (const [i, { y, m }] of outs.entries()) {
    assert.is(y.dtype, 'bf16', `linear on cpu:${i}`);
    assert.is(m.dtype, 'bf16', `matmul on cpu:${i}`);
  }
  assert.equal(values(outs[1].y), values(outs[0].y));
});

test.run();
