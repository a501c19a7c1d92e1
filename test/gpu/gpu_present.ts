/**
 * Whether this machine's GPU tests run, skip, or fail. They run when the addon sees a CUDA device,
 * and skip with one line when the machine has none. When `nvidia-smi -L` lists a GPU that the
 * addon cannot see (a driver/runtime mismatch, a CPU-only build), the file gets a failing test:
 * a broken GPU set-up must never look green.
 */
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';

/** The GPUs `nvidia-smi -L` lists ("GPU 0: NVIDIA H100 …"); none where it is missing or fails. */
export function listedGpus(): string[] {
  const r = spawnSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 20_000 });
  if (r.error || r.status !== 0) return [];
  return r.stdout.split('\n').filter((l) => /^GPU \d+:/.test(l));
}

/** True when the GPU part of `suite` should run; otherwise says why, adding a failing test if GPUs are listed. */
export function gpuSuiteRuns(suite: string): boolean {
  if (fl.cuda.isAvailable()) return true;
  const listed = listedGpus();
  if (listed.length === 0) {
    console.log(`${suite}: skipped, no CUDA device on this machine`);
    return false;
  }
  const build = fl.buildInfo();
  test(`${suite}: nvidia-smi lists ${listed.length} GPU(s), so flockml must see them`, () => {
    assert.unreachable(
      `nvidia-smi lists ${listed.join('; ')} but flockml sees no CUDA device ` +
        (build.cuda
          ? `(addon built with CUDA ${build.cudaVersion}: driver and runtime do not match, or CUDA_VISIBLE_DEVICES hides them)`
          : '(the addon was built without CUDA: rebuild with FLOCKML_CUDA=ON)'),
    );
  });
  return false;
}
