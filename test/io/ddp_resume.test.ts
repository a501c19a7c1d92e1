import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectAllOk, runRanks } from '../dist/harness';
import { tempDir } from './helpers';

const { dir, cleanup } = tempDir('ddp-resume');
test.after(cleanup);

async function ranks(...args: string[]): Promise<string[]> {
  const job = runRanks(join('..', '..', 'io', 'workers', 'ddp_resume.ts'), 2, { args, timeoutMs: 60_000 });
  const results = await job.done;
  expectAllOk(results);
  return results.map((r) => r.out);
}

test('DDP on 2 ranks: 2N steps = N steps, checkpoint, new processes, load, N steps (bit for bit)', async () => {
  const N = '6'; // 8 batches per rank and epoch: the checkpoint falls mid-epoch, after an lr step
  await ranks('full', dir, N);
  const [out0, out1] = await ranks('first', dir, N);
  await ranks('second', dir, N);
  const full = readFileSync(join(dir, 'final-full.safetensors'));
  const resumed = readFileSync(join(dir, 'final-resumed.safetensors'));
  assert.ok(full.equals(resumed), 'the final parameters differ');

  // Only rank 0 wrote the checkpoint; rank 1 only waited for it.
  assert.match(out0, /rank=0 writes=[1-9]/);
  assert.match(out1, /rank=1 writes=0\b/);
  assert.equal(readdirSync(join(dir, 'ckpt')), ['step-000000006']);
  assert.equal(readdirSync(join(dir, 'ckpt', 'step-000000006')).sort(), ['checkpoint.json', 'model.safetensors', 'optimizer.safetensors']);
  const manifest = JSON.parse(readFileSync(join(dir, 'ckpt', 'step-000000006', 'checkpoint.json'), 'utf8'));
  assert.is(manifest.worldSize, 2);
  assert.equal(manifest.sampler, { epoch: 0, position: 24, numReplicas: 2, seed: 7, shuffle: true, dropLast: false, datasetLength: 64 });
  assert.is(manifest.scheduler.lastEpoch, 6);
});

test.run();
