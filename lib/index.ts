/**
 * flockml: tensors, autograd and parallel training for Node.js on CPUs and NVIDIA GPUs.
 *
 *   import * as fl from 'flockml';
 *   const x = fl.randn([64, 784]);
 */
// Installs Tensor's op methods (t.add, t.sum, t.backward, ...) before any other module can use them.
import './ops/methods';
import './autograd/methods';
export { Tensor } from './tensor';
export * as errors from './errors';
export { FlockError, FlockTypeError, FlockRangeError, type ErrorCode } from './errors';
export type { TensorData, TensorLike, TensorList, NestedList, GradHook } from './tensor';
export type { DType, CanonicalDType, DTypeAlias } from './dtype';
export { promoteTypes, isFloating, isDType, canonicalDType } from './dtype';
export { cuda, sync, syncSync, ready, type Device } from './device';
export { cpuDeviceCount, setCpuDeviceCount, cpuDevices, sameDevice, deviceIndex, Event } from './device';
export * as backends from './backends';
export { tidy, keep, memory, emptyCache, resetPeakMemory, memorySnapshot, memoryLeaks, type AllocationSite } from './memory';
export { manualSeed, getRngState, setRngState } from './random';
export { noGrad, enableGrad, isGradEnabled } from './dispatch/grad_mode';
export * from './ops/creation';
export {
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  logicalAnd,
  logicalOr,
  logicalNot,
  gelu,
  clamp,
  where,
  maskedFill,
  clone,
  to,
  type ToTarget,
} from './ops/elementwise';
export { sum, mean, max, min, argmax, argmin, variance as var, std, logsumexp, softmax, logSoftmax } from './ops/reduce';
export { prod, all, any, type ValuesIndices } from './ops/reduce';
export { cumsum, cumprod, type ScanOptions } from './ops/scan';
export { sort, argsort, topk } from './ops/sort';
export { unique, type UniqueOptions, type UniqueResult } from './ops/unique';
export { scatter, scatterReduce, type ScatterReduce, type ScatterReduceOptions } from './ops/scatter';
export { indexAdd } from './ops/indexing';
export { maskedSelect, nonzero } from './ops/select';
export { index, ellipsis, newaxis, type IndexEntry, type IndexSlice } from './ops/index_method';
export { setIndex, indexPut, indexPut_, type IndexPutOptions } from './ops/index_put';
export { randperm, multinomial } from './ops/sample';
export { matmul, mm, bmm } from './ops/linalg';
export {
  reshape,
  flatten,
  squeeze,
  unsqueeze,
  expand,
  permute,
  transpose,
  narrow,
  slice,
  select,
  cat,
  stack,
  split,
  chunk,
} from './ops/shape';
export { indexSelect, gather, scatterAdd, oneHot } from './ops/indexing';
export { flip, roll, repeat, tile, unbind } from './ops/rearrange';
export { isclose, allclose, type CloseOptions } from './ops/predicates';
export { norm, type NormOrd } from './ops/norms';
export { addmm, baddbmm, type AddmmOptions } from './ops/blas';
export { einsum } from './ops/einsum';
export { lerp } from './ops/elementwise';
// Ops of a uniform call shape, generated from the manifest (exp, eq, isnan, ...).
export * from './ops/generated/elementwise';
export * from './ops/generated/binary';
// Ops generated with their kernel from the manifest (`kernel`: tril, triu, ...), and their gradients.
export * from './ops/generated/kernel_ops';
import './ops/generated/grads';
// The gradient formulas of the hand-written op families (lib/ops/grads/).
import './ops/grads';

import { native } from './native';
import { checkNumber } from './validate';
/** Intra-op threads used by CPU kernels. */
export function getNumThreads(): number {
  return native.numThreads();
}
/**
 * Sets the intra-op threads of CPU kernels: an integer from 1 to 1024 (the addon's pool limit);
 * anything else is ERR_RANGE (ERR_ARG when not a number), as PyTorch refuses 0.
 */
export function setNumThreads(n: number): void {
  native.setNumThreads(checkNumber('setNumThreads', 'n', n, { integer: true, min: 1, max: 1024 }));
}
/**
 * How the addon was built and what it chose here: CUDA compiled in, the CPU instruction set kernels
 * use (cpuIsa; FLOCKML_CPU_ISA=avx2 or generic forces a narrower one than cpuIsaDetected), the GEMM
 * micro-kernel's, threads.
 */
export function buildInfo(): {
  cuda: boolean;
  cudaVersion: string;
  sgemm: string;
  bf16gemm: string;
  threads: number;
  cpuIsa: string;
  cpuIsaDetected: string;
  /** True in the CUDA simulator's addon (sim/README.md): its CUDA devices are simulated. */
  cudaSim: boolean;
} {
  return native.buildInfo();
}

export * as nn from './nn';
export * as optim from './optim';
export * as data from './data';
export * as datasets from './data/datasets';
export * as distributed from './distributed/index';
export * as parallel from './parallel/index';
export { DistributedSampler, type DistributedSamplerOptions } from './data/distributed_sampler';
export { save, saveSync, load, loadSync } from './io/safetensors';
export * as io from './io/index';
export * as checkpoint from './io/checkpoint';
export * as profiler from './profiler/index';
export * as utils from './utils/index';
export * as amp from './amp';
export * as text from './text';
export * as models from './models/index';
export { autocast } from './dispatch/autocast';
