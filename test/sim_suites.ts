/**
 * What `npm run test:sim` runs on the CUDA simulator's addon (build-sim/sim/flockml.node): every test file
 * that has a CUDA path, on FLOCKML_CUDA_SIM_DEVICES simulated GPUs, plus the simulator's own tests
 * (test/sim/). The NCCL groups use the simulated NCCL in the same addon. Files with a CUDA path that
 * do not run here are listed with the reason.
 */
export const simSuites: readonly string[] = [
  'test/sim/',
  'test/gpu/',
  'test/ops/harness/harness.test.ts',
  'test/parallel/data_parallel.test.ts',
  'test/parallel/central_storage.test.ts',
  'test/parallel/place.test.ts',
  'test/parallel/pipeline.test.ts',
  'test/parallel/pipeline_ranks.test.ts',
  'test/dispatch/autocast.test.ts',
  'test/devices.test.ts',
  'test/tensor.test.ts',
  'test/runtime/inline_gate.test.ts',
  'test/responsiveness.test.ts',
  'test/native/malformed.test.ts',
  'test/native_loader.test.ts',
  'test/dist/local_groups.test.ts',
  'test/dist/nccl.test.ts',
  'test/dist/tensor_parallel.test.ts',
  'test/dist/ddp.test.ts',
  'test/dist/zero.test.ts',
  'test/dist/zero3.test.ts',
  'test/dist/mesh.test.ts',
  'test/dist/pipeline.test.ts',
  'test/dist/checkpoint_ddp.test.ts',
  'test/amp/grad_scaler_ddp.test.ts',
  'test/dist/fault.test.ts',
  'test/dist/nccl_faults.test.ts',
  'test/nn/first_hour_devices.test.ts',
];

/** CUDA test files the simulator does not run yet, and why. */
export const simWaiting: Readonly<Record<string, string>> = {
  'test/gpu_detection.test.ts': 'checks the real addon against nvidia-smi; the simulator is not a GPU to detect',
};
