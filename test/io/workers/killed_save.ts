/**
 * Saves a complete checkpoint (step 1) and a plain file, says so, then starts larger saves of both
 * and says so; the test kills this process with SIGKILL while those saves run.
 *   killed_save.ts <dir>
 */
import { join } from 'node:path';
import * as fl from '../../../lib';

async function main(): Promise<void> {
  const dir = process.argv[2];
  const model = new fl.nn.Linear(4, 3);
  await fl.checkpoint.save(join(dir, 'ckpt'), { model, step: 1 });
  await fl.save({ w: fl.full([1024], 1) }, join(dir, 'plain.safetensors'));
  console.log('saved-first');
  const big = new fl.nn.Linear(8192, 8192); // 256 MB of weights: the save takes a while
  const saving = fl.checkpoint.save(join(dir, 'ckpt'), { model: big, step: 2 });
  const plain = fl.save({ w: fl.full([64 << 20], 2) }, join(dir, 'plain.safetensors'));
  console.log('saving-second');
  await Promise.all([saving, plain]);
  console.log('saved-second');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
