/**
 * The backend and device a distributed test worker uses. FLOCKML_TEST_BACKEND=nccl: the nccl backend
 * with every tensor and model on `cuda:LOCAL_RANK` (one GPU per rank: real, or simulated under
 * `test/run.ts --sim`); otherwise the ring backend on the CPU. Workers build their values on the CPU
 * (so the seeded values are the same on both backends) and move them with `dev`.
 */
import * as fl from '../../../lib/index';
import { native } from '../../../lib/native';

export const backend: 'ring' | 'nccl' = process.env.FLOCKML_TEST_BACKEND === 'nccl' ? 'nccl' : 'ring';
export const device: string = backend === 'nccl' ? `cuda:${process.env.LOCAL_RANK ?? '0'}` : 'cpu';
export const onGpu = backend === 'nccl';

/** `t` on this worker's device (`t` itself on the CPU; the CPU copy is disposed otherwise). */
export function dev<T extends fl.Tensor>(t: T): T {
  if (!onGpu) return t;
  const moved = fl.tidy(() => t.to(device)) as T;
  t.dispose();
  return moved;
}

/** Options for a new tensor on this worker's device. */
export const on = <O extends object>(opts?: O): O & { device: string } => ({ ...(opts as O), device });

/**
 * FLOCKML_TEST_SIM_STATE=1 (on the CUDA simulator's addon): the worker prints the simulated devices'
 * state (`native.cudaSimState()`: which devices have a context) as its last line, `SIM_STATE {…}`,
 * so a test can check that each rank created a context on its own device only.
 */
if (process.env.FLOCKML_TEST_SIM_STATE === '1')
  process.on('exit', () => process.stdout.write(`SIM_STATE ${(native as { cudaSimState(): string }).cudaSimState()}\n`));
