/**
 * Saves steps 3 and 4 of a Linear(3, 2) with weights 1, then re-saves step 4 with weights 2 and
 * dies by SIGKILL just before the re-save's k-th rename or rm (counted together); prints
 * 'finished' when the re-save makes fewer than k of them.
 *   crash_resave.ts <dir> <k>
 */
import type * as fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import * as fl from '../../../lib';

async function main(): Promise<void> {
  const [dir, kArg] = process.argv.slice(2);
  const k = Number(kArg);
  const model = new fl.nn.Linear(3, 2);
  fl.noGrad(() => model.weight.fill_(1));
  await fl.checkpoint.save(dir, { model, step: 3 });
  await fl.checkpoint.save(dir, { model, step: 4 });
  fl.noGrad(() => model.weight.fill_(2));
  const fs = require('node:fs/promises') as typeof fsp;
  let calls = 0;
  const dieAt = <F extends (...a: never[]) => Promise<unknown>>(f: F): F =>
    ((...a: never[]) => {
      if (++calls === k) {
        process.kill(process.pid, 'SIGKILL');
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000); // SIGKILL lands before this returns
      }
      return f(...a);
    }) as F;
  fs.rename = dieAt(fs.rename);
  fs.rm = dieAt(fs.rm);
  syncBuiltinESMExports();
  console.log('re-saving');
  await fl.checkpoint.save(dir, { model, step: 4 });
  console.log(`finished after ${calls} renames and removals`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
