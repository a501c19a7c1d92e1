/**
 * A save killed mid-write leaves its temporary file; the next save to the same place removes it
 * (fl.save, fl.saveSync, the sharded index, checkpoint folders: one helper, removeDeadTemps),
 * and leaves live writers' temporaries and other files' alone.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { tsNode } from '../dist/harness';
import { tempDir } from './helpers';

const { dir, cleanup } = tempDir('atomic');
test.after(cleanup);

const path = join(dir, 'big.safetensors');
const temps = (prefix: string) => readdirSync(dir).filter((n) => n.startsWith(prefix));

/** Starts workers/dead_writer.ts and SIGKILLs it once one of its saves has a temporary file; resolves with its pid. */
async function killMidSave(): Promise<number> {
  const child = spawn(tsNode[0], [...tsNode.slice(1), join(__dirname, 'workers', 'dead_writer.ts'), path], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const closed = new Promise<string | null>((resolve) => child.on('close', (_, signal) => resolve(signal)));
  const mine = `.big.safetensors.tmp-${child.pid}-`;
  for (let waited = 0; temps(mine).length === 0; waited++) {
    if (waited > 60_000 || child.exitCode !== null) throw new Error(`dead_writer.ts made no temporary file: ${out}`);
    await new Promise((r) => setTimeout(r, 1));
  }
  child.kill('SIGKILL');
  assert.is(await closed, 'SIGKILL', out);
  return child.pid!;
}

test('a save killed mid-write leaves its temporary file; the next fl.save removes it', async () => {
  let pid = 0;
  // The kill can land after a save renamed its file into place: then try again.
  for (let tries = 0; tries < 5 && !pid; tries++) {
    const p = await killMidSave();
    if (temps(`.big.safetensors.tmp-${p}-`).length) pid = p;
  }
  assert.ok(pid, 'a killed writer left a temporary file');
  const left = temps(`.big.safetensors.tmp-${pid}-`);
  assert.ok(statSync(join(dir, left[0])).size > 0);
  // A live process's temporary (our parent's pid) and another file's temporary are not touched.
  const live = `.big.safetensors.tmp-${process.ppid}-1`;
  const other = `.other.safetensors.tmp-${pid}-2`;
  writeFileSync(join(dir, live), 'x');
  writeFileSync(join(dir, other), 'x');
  await fl.save({ a: fl.ones([2]) }, path);
  assert.equal(temps('.big.safetensors.tmp-'), [live]);
  assert.equal(temps('.other.safetensors.tmp-'), [other]);
  assert.equal(fl.loadSync(path).a.toArray(), [1, 1]);
});

test('fl.saveSync and the sharded index remove dead writers’ temporaries too', async () => {
  const gone = spawnSync(process.execPath, ['-e', '0']).pid; // a process that has exited
  writeFileSync(join(dir, `.big.safetensors.tmp-${gone}-3`), 'x');
  fl.saveSync({ a: fl.ones([1]) }, path);
  assert.equal(temps(`.big.safetensors.tmp-${gone}-`), []);
  const shards = join(dir, 'shards');
  await fl.io.saveSharded(shards, { a: fl.ones([2]) });
  writeFileSync(join(shards, `.model.safetensors.index.json.tmp-${gone}-4`), '{');
  writeFileSync(join(shards, `.model-00001-of-00001.safetensors.tmp-${gone}-5`), 'x');
  await fl.io.saveSharded(shards, { a: fl.ones([2]) });
  assert.equal(
    readdirSync(shards).filter((n) => n.includes('.tmp-')),
    [],
  );
});

test.run();
