/**
 * Where the nccl variants of the multi-process strategy tests run: NCCL loads and the machine has a GPU
 * per rank (the CUDA simulator under `test/run.ts --sim`, or a real multi-GPU machine). The workers read
 * NCCL_ENV (test/dist/workers/backend.ts) and put every rank on `cuda:LOCAL_RANK`.
 */
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { gpuSuiteRuns } from '../gpu/gpu_present';

export const NCCL_ENV: NodeJS.ProcessEnv = { FLOCKML_TEST_BACKEND: 'nccl' };

let gpus: number | undefined;
/** True when `ranks` ranks can each have their own GPU under nccl; otherwise says once why the nccl part of `suite` is skipped. */
export function ncclRuns(suite: string, ranks: number): boolean {
  // gpuSuiteRuns adds a failing test where nvidia-smi lists GPUs that flockml does not see.
  gpus ??= gpuSuiteRuns(`${suite} (nccl part)`) && native.ncclInfo().available ? fl.cuda.deviceCount() : 0;
  if (gpus >= ranks) return true;
  console.log(`${suite} (nccl, ${ranks} ranks): skipped, ${gpus ? `${gpus} GPU(s)` : 'no CUDA device or no NCCL'} on this machine`);
  return false;
}

/**
 * Whether the ring (CPU) variants run: not on the CUDA simulator's addon (`test/run.ts --sim`), whose CPU
 * path is the plain addon's, already run by the plain suite; there only the nccl variants run.
 */
export const ringRuns: boolean = !(fl.buildInfo() as { cudaSim?: boolean }).cudaSim;
