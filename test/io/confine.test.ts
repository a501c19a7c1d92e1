/**
 * File names in checkpoint.json and model.safetensors.index.json stay inside their folder: an
 * absolute path, a `..` or a symlink out of it is ERR_FORMAT naming the path, and nothing loads.
 * Each escape points at a valid file, so a loader that followed it would succeed silently.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { tempDir } from './helpers';
import { rejection } from '../helpers/errors';

const { dir, cleanup } = tempDir('confine');
test.after(cleanup);

const filled = (v: number) => {
  const m = new fl.nn.Linear(3, 2);
  fl.noGrad(() => {
    m.weight.fill_(v);
    m.bias?.fill_(v);
  });
  return m;
};

// Outside every checkpoint folder: weights (all 9) that fit the model, and shard files that fit the index.
const elsewhere = join(dir, 'elsewhere');
const good = join(dir, 'ckpt', 'step-000000001');

test('setup', async () => {
  mkdirSync(elsewhere);
  fl.saveSync(filled(9).stateDict(), join(elsewhere, 'model.safetensors'));
  const m = filled(1);
  await fl.checkpoint.save(join(dir, 'ckpt'), { model: m, optimizer: new fl.optim.SGD(m.parameters(), { lr: 0.1 }), step: 1 });
});

// biome-ignore lint/suspicious/noExplicitAny: edits parsed JSON of any shape, on purpose
function variant(name: string, edit: (folder: string, manifest: Record<string, any>) => void): string {
  const folder = join(dir, 'variants', name, 'step-000000001');
  cpSync(good, folder, { recursive: true });
  const file = join(folder, 'checkpoint.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  edit(folder, manifest);
  writeFileSync(file, JSON.stringify(manifest));
  return folder;
}

async function rejectsEscape(folder: string, mentions: RegExp[], options: { optimizer?: boolean } = {}): Promise<void> {
  const model = filled(5);
  const o = options.optimizer ? { model, optimizer: new fl.optim.SGD(model.parameters(), { lr: 0.1 }) } : { model };
  const err = await rejection(fl.checkpoint.load(folder, o));
  assert.equal(model.weight.toArray(), filled(5).weight.toArray(), `the model is unchanged (then: ${err.message})`);
  assert.is(err.code, 'ERR_FORMAT', err.message);
  for (const re of mentions) assert.match(err.message, re);
}

test('checkpoint.json: files.model with .. segments', async () => {
  const folder = variant('dotdot', (_, m) => (m.files.model = '../../../elsewhere/model.safetensors'));
  await rejectsEscape(folder, [/files\.model/, /"\.\.\/\.\.\/\.\.\/elsewhere\/model\.safetensors"/, /'\.\.'/]);
});

test('checkpoint.json: files.model as an absolute path', async () => {
  const target = join(elsewhere, 'model.safetensors');
  const folder = variant('absolute', (_, m) => (m.files.model = target));
  await rejectsEscape(folder, [/files\.model/, new RegExp(JSON.stringify(target).replace(/[/.]/g, '\\$&')), /absolute/]);
});

test('checkpoint.json: a symlinked model file, and a symlinked folder, pointing outside', async () => {
  const file = variant('symlink-file', (folder) => {
    rmSync(join(folder, 'model.safetensors'));
    symlinkSync(join(elsewhere, 'model.safetensors'), join(folder, 'model.safetensors'));
  });
  await rejectsEscape(file, [/files\.model/, /"model\.safetensors"/, /symlink/]);
  const sub = variant('symlink-dir', (folder, m) => {
    symlinkSync(elsewhere, join(folder, 'sub'));
    m.files.model = 'sub/model.safetensors';
  });
  await rejectsEscape(sub, [/"sub\/model\.safetensors"/, /symlink/]);
});

test('checkpoint.json: files.optimizer is confined too', async () => {
  const folder = variant('optimizer', (_, m) => (m.files.optimizer = '../../../ckpt/step-000000001/optimizer.safetensors'));
  await rejectsEscape(folder, [/files\.optimizer/, /'\.\.'/], { optimizer: true });
});

test('symlinks that stay inside the folder, and a folder reached through a symlink, load', async () => {
  const folder = variant('inside', (f) => {
    mkdirSync(join(f, 'weights'));
    renameSync(join(f, 'model.safetensors'), join(f, 'weights', 'real.safetensors'));
    symlinkSync(join('weights', 'real.safetensors'), join(f, 'model.safetensors'));
  });
  const link = join(dir, 'variants', 'link-to-inside');
  symlinkSync(folder, link);
  const model = filled(5);
  await fl.checkpoint.load(link, { model });
  assert.equal(model.weight.toArray(), filled(1).weight.toArray());
});

// Sharded states.
const shardDir = join(dir, 'sharded');
const outside = join(dir, 'sharded-elsewhere');
const state = { a: fl.arange(0, 6, 1, { dtype: 'f32' }), b: fl.ones([2, 2]) };

// biome-ignore lint/suspicious/noExplicitAny: edits parsed JSON of any shape, on purpose
function editIndex(edit: (index: Record<string, any>) => void): void {
  const file = join(shardDir, 'model.safetensors.index.json');
  const index = JSON.parse(readFileSync(file, 'utf8'));
  edit(index);
  writeFileSync(file, JSON.stringify(index));
}

async function rejectsShardEscape(mentions: RegExp[]): Promise<void> {
  for (const read of [() => fl.io.loadSharded(shardDir), () => fl.io.readShardIndex(shardDir)]) {
    const err = await rejection(read());
    assert.is(err.code, 'ERR_FORMAT', err.message);
    for (const re of mentions) assert.match(err.message, re);
  }
}

test('sharded index: a piece file with .., an absolute path, a symlink out; a weight_map entry out', async () => {
  await fl.io.saveSharded(shardDir, state);
  await fl.io.saveSharded(outside, { a: fl.full([6], 9), b: fl.full([2, 2], 9) });
  const file = 'model-00001-of-00001.safetensors';
  editIndex((ix) => (ix.shards.a.pieces[0].file = `../sharded-elsewhere/${file}`));
  await rejectsShardEscape([/shards\['a'\]\.pieces\[0\]\.file/, /"\.\.\/sharded-elsewhere\//]);
  editIndex((ix) => (ix.shards.a.pieces[0].file = join(outside, file)));
  await rejectsShardEscape([/absolute/, /sharded-elsewhere/]);
  editIndex((ix) => (ix.shards.a.pieces[0].file = file));
  editIndex((ix) => (ix.weight_map.b = '/etc/passwd'));
  await rejectsShardEscape([/weight_map\['b'\]/, /"\/etc\/passwd"/]);
  editIndex((ix) => (ix.weight_map.b = file));
  renameSync(join(shardDir, file), join(shardDir, 'kept.safetensors'));
  symlinkSync(join(outside, file), join(shardDir, file));
  await rejectsShardEscape([new RegExp(`"${file.replace(/\./g, '\\.')}"`), /symlink/]);
  // Put back, it loads again.
  rmSync(join(shardDir, file));
  renameSync(join(shardDir, 'kept.safetensors'), join(shardDir, file));
  const back = await fl.io.loadSharded(shardDir);
  assert.equal((back.a as fl.Tensor).toArray(), [0, 1, 2, 3, 4, 5]);
});

test.run();
