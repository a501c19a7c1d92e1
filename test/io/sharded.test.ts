import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import type { Shard } from '../../lib/io';
import { sameTensor, tempDir } from './helpers';

const { dir, cleanup } = tempDir('sharded');
test.after(cleanup);

// The full state: two tensors split flat across ranks (as ZeRO shards them), one replicated.
const full = {
  'layer.weight': fl.arange(0, 35, 1, { dtype: 'f32' }).reshape([7, 5]),
  'layer.moment': fl.arange(100, 111, 1, { dtype: 'f64' }),
  'embed.weight': fl.arange(0, 12, 1, { dtype: 'i64' }).reshape([3, 4]),
};
const split = ['layer.weight', 'layer.moment'];

function piece(key: keyof typeof full, rank: number, world: number): Shard {
  const t = full[key];
  const n = t.shape.reduce((a, b) => a * b, 1);
  const [s, e] = fl.io.shardRange(n, rank, world);
  return { tensor: t.reshape([n]).narrow(0, s, e - s), shape: [...t.shape], start: s };
}

test('two ranks save their shards and an index in the Hugging Face layout', async () => {
  for (const rank of [0, 1]) {
    const state: Record<string, fl.Tensor | Shard> = { 'embed.weight': full['embed.weight'] }; // replicated: both ranks write it
    for (const k of split) state[k] = piece(k as keyof typeof full, rank, 2);
    await fl.io.saveShard(dir, state, { rank, worldSize: 2 });
  }
  const index = await fl.io.writeShardIndex(dir, { worldSize: 2 });
  const onDisk = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
  assert.equal(onDisk, index);
  assert.equal(index.weight_map, {
    'embed.weight': 'model-00001-of-00002.safetensors',
    'layer.weight': 'model-00001-of-00002.safetensors',
    'layer.moment': 'model-00001-of-00002.safetensors',
  });
  assert.is(index.metadata.total_size, 35 * 4 + 11 * 8 + 12 * 8);
  assert.equal(index.shards['layer.weight'].pieces, [
    { file: 'model-00001-of-00002.safetensors', start: 0, end: 18 },
    { file: 'model-00002-of-00002.safetensors', start: 18, end: 35 },
  ]);
  assert.is(index.shards['embed.weight'].split, false);
  assert.is(index.shards['embed.weight'].pieces.length, 1);
  // Each shard file is an ordinary safetensors file.
  const shard1 = await fl.load(join(dir, 'model-00002-of-00002.safetensors'));
  assert.equal([...shard1['layer.weight'].shape], [17]);
});

test('the 2-rank state loads into 1 rank whole', async () => {
  const got = await fl.io.loadSharded(dir);
  for (const [k, t] of Object.entries(full)) sameTensor(got[k] as fl.Tensor, t, k);
});

test('the 2-rank state loads into 3 ranks, each reading its even share', async () => {
  for (let rank = 0; rank < 3; rank++) {
    const got = await fl.io.loadSharded(dir, { rank, worldSize: 3 });
    sameTensor(got['embed.weight'] as fl.Tensor, full['embed.weight'], 'replicated tensor stays whole');
    for (const k of split) {
      const want = piece(k as keyof typeof full, rank, 3);
      const s = got[k] as Shard;
      assert.equal(s.shape, want.shape, k);
      assert.is(s.start, want.start, k);
      sameTensor(s.tensor, want.tensor.clone(), `${k} on rank ${rank} of 3`);
    }
  }
});

test('a gap between pieces is refused with ERR_FORMAT', async () => {
  const d2 = join(dir, 'gap');
  await fl.io.saveShard(d2, { w: { tensor: fl.ones([3]), shape: [8], start: 0 } }, { rank: 0, worldSize: 2 });
  await fl.io.saveShard(d2, { w: { tensor: fl.ones([4]), shape: [8], start: 4 } }, { rank: 1, worldSize: 2 });
  const err = await fl.io.writeShardIndex(d2, { worldSize: 2 }).then(
    () => null,
    (e) => e,
  );
  assert.is(err?.code, 'ERR_FORMAT');
  assert.match(err.message, /'w'/);
});

test.run();
