/** MFU arithmetic and the peak table (no timing is checked). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';

test('mfu = flops per second over the peak', () => {
  assert.is(fl.utils.mfu({ flopsPerStep: 1e12, stepMs: 100, peakFlops: 100e12 }), 0.1);
  assert.is(fl.utils.mfu({ flopsPerStep: 0, stepMs: 5, peakFlops: 1e9 }), 0);
});

test('known GPUs by the names the driver reports, dense peaks by dtype', () => {
  const peak = fl.utils.gpuPeakFlops;
  assert.is(peak('NVIDIA H100 80GB HBM3', 'bf16'), 989.4e12);
  assert.is(peak('NVIDIA H100 80GB HBM3', 'tf32'), 494.7e12);
  assert.is(peak('NVIDIA H100 PCIe', 'bf16'), 756e12);
  assert.is(peak('NVIDIA H200', 'f32'), 66.9e12);
  assert.is(peak('NVIDIA A100-SXM4-80GB', 'f16'), 312e12);
  assert.is(peak('NVIDIA A100-PCIE-40GB', 'f32'), 19.5e12);
  assert.is(peak('NVIDIA GeForce RTX 3060', 'bf16'), undefined);
});

test('the CPU peak is measured once and cached; mfu on the CPU uses it', () => {
  const p = fl.utils.cpuPeakFlops();
  assert.ok(p > 1e8 && Number.isFinite(p), String(p));
  assert.is(fl.utils.cpuPeakFlops(), p);
  assert.is(fl.utils.peakFlops('cpu'), p);
  assert.is(fl.utils.mfu({ flopsPerStep: p, stepMs: 1000 }), 1);
  expectError(() => fl.utils.peakFlops('cpu', 'bf16'), TypeError, 'ERR_ARG');
});

test('options are validated', () => {
  expectError(() => fl.utils.mfu({ flopsPerStep: 1, stepMs: 1, peakFlops: 1, extra: 1 } as never), TypeError, 'ERR_ARG');
  expectError(() => fl.utils.mfu({ flopsPerStep: 1, stepMs: 0, peakFlops: 1 }), RangeError, 'ERR_RANGE');
  expectError(() => fl.utils.mfu({ flopsPerStep: -1, stepMs: 1, peakFlops: 1 }), RangeError, 'ERR_RANGE');
  expectError(() => fl.utils.mfu({ flopsPerStep: 1, stepMs: 1, dtype: 'f8' as never, peakFlops: 1 }), TypeError, 'ERR_ARG');
});

test.run();
