/** ParameterServer.create refuses bad options and models with coded errors before connecting anywhere. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { assignShards, paramSpecs } from '../../lib/parallel/parameter_server/shard';
import { ClockTable } from '../../lib/parallel/parameter_server/clocks';
import { rejection } from './harness';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { encode, readFrames } from '../../lib/parallel/parameter_server/wire';

const env = {
  RANK: '1',
  WORLD_SIZE: '3',
  LOCAL_RANK: '1',
  LOCAL_WORLD_SIZE: '3',
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: '1',
  FLOCKML_TOKEN: 't',
};
const model = () => new fl.nn.Sequential(new fl.nn.Linear(4, 3), new fl.nn.Linear(3, 2));
const create = (o: unknown, m: fl.nn.Module = model()) => fl.parallel.ParameterServer.create(m, o as fl.parallel.ParameterServerOptions);

test('bad options: coded errors naming the option', async () => {
  const base = { optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.1 }, env };
  const cases: Array<[unknown, string, RegExp]> = [
    [undefined, 'ERR_ARG', /options \{ optimizer/],
    [{ ...base, stalenes: 1 }, 'ERR_ARG', /unknown option 'stalenes' \(did you mean 'staleness'\?\)/],
    [{ ...base, optimizer: 'sgd' }, 'ERR_ARG', /optimizer must be an optimizer class/],
    [{ ...base, optimizerOptions: 3 }, 'ERR_ARG', /optimizerOptions must be an object/],
    [{ ...base, staleness: -1 }, 'ERR_RANGE', /staleness must be an integer ≥ 0 or Infinity, got number -1/],
    [{ ...base, staleness: 1.5 }, 'ERR_RANGE', /staleness/],
    [{ ...base, timeoutMs: 0 }, 'ERR_RANGE', /timeoutMs must be a positive integer/],
    [{ ...base, servers: 0 }, 'ERR_RANGE', /servers must be a positive integer/],
    [{ ...base, servers: 3 }, 'ERR_RANGE', /servers is 3 in a world of 3: at least one rank must be a worker/],
    [{ ...base, optimizerOptions: { lr: -1 } }, 'ERR_RANGE', /lr/],
    [{ ...base, env: { ...env, RANK: '5' } }, 'ERR_ARG', /rank 5 is outside a world of 3/],
  ];
  for (const [o, code, msg] of cases) {
    const e = await rejection(create(o));
    assert.is(e.code, code, `${JSON.stringify(o)}: ${e.message}`);
    assert.match(e.message, msg);
  }
});

test('bad models: not a module, more servers than tensors, a dtype the wire does not carry', async () => {
  const o = { optimizer: fl.optim.SGD, optimizerOptions: { lr: 0.1 }, env };
  let e = await rejection(create(o, {} as fl.nn.Module));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /model must be an nn.Module/);
  const one = new fl.nn.Linear(2, 2, { bias: false });
  e = await rejection(
    fl.parallel.ParameterServer.create(one, { ...o, servers: 2, env: { ...env, WORLD_SIZE: '4', LOCAL_WORLD_SIZE: '4' } }),
  );
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /2 servers but the model has 1 parameter tensors/);
  const half = model().to('f16');
  e = await rejection(create(o, half));
  assert.is(e.code, 'ERR_DTYPE');
  assert.match(e.message, /parameter 0 \(shape \[3, 4\]\) is f16/);
});

test('shards: whole tensors, greedy by bytes, largest first, ties to the lower rank', () => {
  const ps = [[100], [10, 10], [50], [30], [20], [1]].map((s) => fl.zeros(s));
  const specs = paramSpecs('t', ps);
  const shards = assignShards('t', specs, 3);
  // Bytes 400, 400, 200, 120, 80, 4: 0 → s0, 1 → s1, 2, 3 and 4 → s2 (200, 320, 400), then 5 → s0 (a three-way tie).
  assert.equal(
    shards.map((sh) => sh.map((s) => s.index)),
    [[0, 5], [1], [2, 3, 4]],
  );
  assert.equal(
    shards.map((sh) => sh.reduce((n, s) => n + s.bytes, 0)),
    [404, 400, 400],
  );
  assert.equal(paramSpecs('t', [fl.zeros([2, 3], { dtype: 'f64' })])[0].bytes, 48);
});

test('clock table: reads wait for the start and the bound; a join below the floor is refused', () => {
  const c = new ClockTable(1, [2, 3]);
  assert.ok(c.join(2, 0));
  assert.not.ok(c.mayRead(0), 'rank 3 has not joined yet');
  assert.ok(c.join(3, 0));
  assert.ok(c.mayRead(0));
  c.tick(2);
  assert.ok(c.mayRead(1));
  c.tick(2);
  assert.not.ok(c.mayRead(2), 'two clocks ahead of rank 3');
  assert.not.ok(c.join(4, -1));
  c.drop(3);
  assert.ok(c.mayRead(2), 'the slow worker was dropped');
  assert.is(c.floor, 2);
  c.drop(2);
  assert.ok(c.finished);
  assert.is(c.floor, 2, 'with none live, a joiner starts at the highest clock reached');
});

function fakeSocket(): Socket & EventEmitter {
  const s = new EventEmitter() as Socket & EventEmitter & { destroyed: boolean };
  s.destroyed = false;
  s.destroy = () => {
    s.destroyed = true;
    return s;
  };
  return s;
}

test('frames: split anywhere, several per chunk, payload bytes intact; over the limit refused before buffering', () => {
  const sock = fakeSocket();
  const got: Array<[unknown, number[]]> = [];
  readFrames(
    sock,
    (h, p) => got.push([h, [...p]]),
    (why) => got.push([why, []]),
    () => 16,
  );
  const a = encode({ op: 'push', id: 1 }, [Buffer.from([1, 2, 3]), Buffer.from([4])]);
  const b = encode({ op: 'pull', id: 2 });
  const all = Buffer.concat([a, b, a]);
  for (const cut of [1, 3, 7, 9, all.length - 2]) {
    sock.emit('data', all.subarray(0, cut));
    sock.emit('data', all.subarray(cut));
  }
  assert.is(got.length, 15);
  assert.equal(got[0], [{ op: 'push', id: 1 }, [1, 2, 3, 4]]);
  assert.equal(got[1], [{ op: 'pull', id: 2 }, []]);
  const big = encode({ op: 'push' }, [Buffer.alloc(17)]);
  sock.emit('data', big.subarray(0, 8));
  assert.match(String(got[15][0]), /a payload of 17 bytes is outside the 16-byte limit/);
  assert.ok(sock.destroyed);
});

test.run();
