/**
 * The parameter server's flat path: frames received into one aligned buffer, gradients and pulled
 * values made as views of one tensor from those bytes, bit-equal to building each parameter on its
 * own; the shared-memory buffers a worker and a server on one host exchange them through.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, connect, type Socket } from 'node:net';
import * as fl from '../../lib/index';
import { paramSpecs } from '../../lib/parallel/parameter_server/shard';
import { readFlat, tensorsOf, typedOf } from '../../lib/parallel/parameter_server/flat';
import { readFrames, send } from '../../lib/parallel/parameter_server/wire';
import { createShared, openShared, sharedBytes, unlinkShared, writeShared } from '../../lib/parallel/parameter_server/shm';
import { native } from '../../lib/native';
import { existsSync } from 'node:fs';

async function pair(): Promise<{ a: Socket; b: Socket; close: () => void }> {
  let accepted!: (s: Socket) => void;
  const got = new Promise<Socket>((r) => (accepted = r));
  const server = createServer((s) => accepted(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = connect({ host: '127.0.0.1', port: (server.address() as { port: number }).port });
  const b = await got;
  return {
    a,
    b,
    close: () => {
      a.destroy();
      b.destroy();
      server.close();
    },
  };
}

test('frames over a socket: a 1 MB payload spanning many chunks arrives whole and 8-byte aligned, between small frames', async () => {
  const { a, b, close } = await pair();
  const frames: Array<{ header: Record<string, unknown>; payload: Buffer }> = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  readFrames(
    b,
    (header, payload) => {
      frames.push({ header, payload });
      if (frames.length === 4) done();
    },
    (why) => assert.unreachable(why),
    () => 1 << 21,
  );
  const big = new Float32Array(262_147).map((_, i) => i * 0.5 - 7);
  const head = Buffer.from(big.buffer, 0, 40_000),
    tail = Buffer.from(big.buffer, 40_000);
  send(a, { op: 'small', id: 1 }, [Buffer.from([9, 8, 7])]);
  send(a, { op: 'push', id: 22, note: 'odd-length header' }, [head, tail]);
  send(a, { op: 'bye', id: 3 });
  send(a, { op: 'push', id: 4 }, [Buffer.from(big.buffer, 0, 12)]);
  await all;
  close();
  assert.equal(
    frames.map((f) => f.header.id),
    [1, 22, 3, 4],
  );
  assert.equal([...frames[0].payload], [9, 8, 7]);
  const p = frames[1].payload;
  assert.is(p.length, big.byteLength);
  assert.is(p.byteOffset % 8, 0);
  const values = typedOf('f32', p);
  assert.is(values.buffer, p.buffer, 'an aligned payload is viewed, not copied');
  assert.ok(values.every((v, i) => v === big[i]));
  assert.is(frames[2].payload.length, 0);
  assert.equal([...typedOf('f32', frames[3].payload)], [...big.subarray(0, 3)]);
});

test('typedOf copies an unaligned payload', () => {
  const raw = Buffer.alloc(13);
  new Float32Array(raw.buffer, 0, 3).set([1.5, -2, 3]);
  const shifted = Buffer.alloc(14);
  raw.copy(shifted, 1);
  const v = typedOf('f32', shifted.subarray(1, 13));
  assert.equal([...v], [1.5, -2, 3]);
  assert.is(v.byteOffset % 4, 0);
});

test('tensorsOf: views of one tensor, bit-equal to per-parameter tensors, a missing gradient null, nothing leaked', async () => {
  fl.manualSeed(3);
  const params = [fl.randn([5, 7]), fl.randn([7]), fl.randn([3, 5]), fl.randn([3])];
  const specs = paramSpecs('test', params);
  const present = [true, false, true, true];
  const bytes = Buffer.concat(await readFlat(params.filter((_, i) => present[i])));
  const before = fl.memory().cpu.tensors;
  const got = tensorsOf(
    specs,
    present,
    bytes,
    params.map(() => 'cpu'),
  );
  assert.is(got[1], null);
  for (const i of [0, 2, 3]) {
    const t = got[i] as fl.Tensor;
    assert.equal(t.shape, params[i].shape);
    assert.equal([...(t.dataSync() as Float32Array)], [...(params[i].dataSync() as Float32Array)]);
  }
  // An SGD step with the views as gradients equals one with separately built gradients, bit for bit.
  const w1 = params.map((p) => p.clone()),
    w2 = params.map((p) => p.clone());
  for (const w of [w1, w2]) w.forEach((p) => (p.requiresGrad = true));
  w1.forEach((p, i) => (p.grad = got[i]));
  w2.forEach((p, i) => (p.grad = present[i] ? params[i].clone() : null));
  new fl.optim.SGD(w1, { lr: 0.1, momentum: 0.9, weightDecay: 0.01 }).step();
  new fl.optim.SGD(w2, { lr: 0.1, momentum: 0.9, weightDecay: 0.01 }).step();
  w1.forEach((p, i) => assert.equal([...(p.dataSync() as Float32Array)], [...(w2[i].dataSync() as Float32Array)]));
  for (const w of [...w1, ...w2]) {
    w.grad?.dispose();
    w.grad = null;
  }
  for (const w of [...w1, ...w2]) w.dispose();
  const again = fl.memory().cpu.tensors;
  for (const t of tensorsOf(
    specs,
    present,
    bytes,
    params.map(() => 'cpu'),
  ))
    t?.dispose();
  assert.is(fl.memory().cpu.tensors, again, 'the flat tensor and every view are released');
  assert.ok(again >= before);
});

test('tensorsOf with mixed dtypes makes one tensor per parameter', async () => {
  const params = [fl.tensor(new Float32Array([1, 2, 3])), fl.tensor(new Float64Array([0.1, 0.2])), fl.tensor(new Float32Array([4]))];
  const specs = paramSpecs('test', params);
  const bytes = Buffer.concat(await readFlat(params));
  assert.is(bytes.length, 12 + 16 + 4);
  const got = tensorsOf(
    specs,
    [true, true, true],
    bytes,
    params.map(() => 'cpu'),
  );
  assert.equal(
    got.map((t) => t?.dtype),
    ['f32', 'f64', 'f32'],
  );
  assert.equal([...((got[1] as fl.Tensor).dataSync() as Float64Array)], [0.1, 0.2]);
  assert.equal([...((got[2] as fl.Tensor).dataSync() as Float32Array)], [4]);
  for (const t of got) t?.dispose();
});

test('shared memory: a worker-made buffer maps on the server side, tensors written end to end read back on both; misuse is refused with codes', async () => {
  const made = createShared(1, 0, 64);
  assert.ok(made, 'shared memory can be made here');
  const { name, buffer } = made as { name: string; buffer: ArrayBuffer };
  assert.match(name, /^\/flockml-ps-\d+-1-0-[0-9a-f]{16}$/);
  assert.is(openShared(name, 63), null, 'a size other than the one made is refused');
  const other = openShared(name, 64) as ArrayBuffer;
  assert.ok(other);
  unlinkShared(name);
  assert.not.ok(existsSync(`/dev/shm${name}`), 'the name is gone once unlinked; the mappings stay');
  assert.is(openShared(name, 64), null);
  const a = fl.tensor(new Float32Array([1.5, -2, 3, 4])),
    b = fl.tensor(new Float64Array([0.25, 1e-300]));
  await writeShared([a, b], buffer, 8);
  assert.equal([...new Float32Array(other, 8, 4)], [1.5, -2, 3, 4]);
  assert.equal([...new Float64Array(other, 24, 2)], [0.25, 1e-300]);
  assert.equal([...sharedBytes(other, 8, 4)], [...Buffer.from(new Float32Array([1.5]).buffer)]);
  const code = async (f: () => unknown) => {
    try {
      await f();
    } catch (e) {
      return (e as { code?: string }).code;
    }
    return 'nothing thrown';
  };
  assert.is(await code(() => native.psReadInto([a.handle], new ArrayBuffer(64), 0)), 'ERR_ARG');
  assert.is(await code(() => native.psReadInto([a.handle, b.handle], buffer, 40)), 'ERR_RANGE');
  assert.is(await code(() => native.psShmOpen('/not-ours', 64)), 'ERR_ARG');
  assert.is(await code(() => native.psShmOpen('/flockml-ps-0-no-such-object', 64)), 'ERR_IO');
  a.dispose();
  b.dispose();
});

test.run();
