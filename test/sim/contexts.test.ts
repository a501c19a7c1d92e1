/**
 * Context accounting on simulated GPUs: since CUDA 12 every cudaSetDevice creates the device's
 * primary context (hundreds of MB), so a process that works on cuda:1 and cuda:2 must never create
 * one on cuda:0 or cuda:3. Before DeviceGuard restored only devices flockml itself had made current,
 * every task on cuda:r put a context on GPU 0 when it ended (in every rank of a multi-GPU job).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

interface SimState {
  devices: { context: boolean; used: number; reserved: number; liveStreams: number }[];
}

const repo = join(__dirname, '..', '..');

test('training and all-reducing on cuda:1 and cuda:2 creates contexts there and nowhere else', () => {
  const r = spawnSync(join(repo, 'node_modules', '.bin', 'tsx'), [join(__dirname, 'workers', 'contexts_worker.ts')], {
    encoding: 'utf8',
    env: {
      ...process.env,
      FLOCKML_CUDA_SIM_DEVICES: '4',
      FLOCKML_NCCL_PATH: process.env.FLOCKML_NCCL_PATH ?? process.env.FLOCKML_NATIVE ?? '',
    },
    timeout: 120_000,
  });
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
  const state = JSON.parse(r.stdout.trim().split('\n').pop() as string) as SimState;
  assert.equal(
    state.devices.map((d) => d.context),
    [false, true, true, false],
    `contexts per device: ${JSON.stringify(state.devices)}`,
  );
});

test.run();
