/**
 * The event loop stays free while an ordinary `for await` training loop runs (the README's loop),
 * and memory stays flat across epochs. Bounds are generous and nothing is timed for speed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { get, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as fl from '../lib';
import { throwsCode } from './fixtures/load';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const { nn } = fl;

function setup(rows: number) {
  fl.manualSeed(0);
  const model = new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 64), new nn.ReLU(), new nn.Linear(64, 10));
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const data = new fl.data.TensorDataset(fl.rand([rows, 1, 28, 28]), fl.randint(0, 10, [rows]));
  const loader = new fl.data.DataLoader(data, { batchSize: 32, shuffle: true });
  const step = (x: fl.Tensor, y: fl.Tensor): void => {
    const loss = fl.tidy(() => {
      const l = fl.nn.functional.crossEntropy(model.forward(x), y);
      opt.zeroGrad();
      l.backward();
      opt.step();
      return l;
    });
    loss.dispose();
  };
  return { loader, step };
}

test('a for-await training loop keeps timers and HTTP answering', async () => {
  const { loader, step } = setup(32 * 20);
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const latencies: number[] = [];
  let training = true;
  const probe = async (): Promise<void> => {
    while (training) {
      const t0 = Date.now();
      await new Promise<void>((done, fail) =>
        get({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => res.resume().on('end', done)).on('error', fail),
      );
      if (training) latencies.push(Date.now() - t0);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const probing = probe();
  // Train until the event loop has plainly been served (or give up after many epochs).
  let epochs = 0;
  while (epochs < 50 && (latencies.length < 5 || ticks < 10)) {
    for await (const [x, y] of loader as AsyncIterable<fl.Tensor[]>) step(x, y);
    epochs++;
  }
  training = false;
  clearInterval(timer);
  await probing;
  server.close();
  assert.ok(latencies.length >= 5, `only ${latencies.length} HTTP requests answered during ${epochs} epochs of training`);
  assert.ok(ticks >= 10, `a 10 ms interval ticked ${ticks} times during ${epochs} epochs of training`);
  // Generous: a frozen loop answers only after training ends, seconds later.
  assert.ok(Math.max(...latencies) < 1000, `slowest /health answer during training: ${Math.max(...latencies)} ms`);
});

test('live tensors do not grow across epochs of the README loop', async () => {
  const { loader, step } = setup(32 * 10);
  const live: number[] = [];
  for (let e = 0; e < 8; e++) {
    let first = true;
    for await (const [x, y] of loader as AsyncIterable<fl.Tensor[]>) {
      // The previous epoch's garbage was collected below; its finalizers need a macrotask turn,
      // which only the loader gives this loop.
      if (first) live.push(fl.memory().cpu.tensors);
      first = false;
      step(x, y);
    }
    gc();
  }
  assert.ok(live[7] <= live[1] + 2, `live tensors at the start of each epoch: ${live.join(', ')}`);
});

test('fl.ready resolves for each device, and on a macrotask turn', async () => {
  await fl.ready();
  await fl.ready('cpu');
  let immediate = false;
  setImmediate(() => (immediate = true));
  await fl.ready();
  assert.ok(immediate, 'fl.ready resolved before a pending setImmediate ran');
  await fl.ready('cuda:99').then(
    () => assert.unreachable('cuda:99 is no device here'),
    (e: { code?: string }) => assert.ok(e.code === 'ERR_DEVICE', String(e)),
  );
  throwsCode(() => fl.syncSync('gpu'), 'ERR_DEVICE');
});

test('fl.ready waits for a long queue to drain, and leaves run-time errors to the next sync point', async () => {
  const a = fl.full([64, 64], 0.5);
  const outs: fl.Tensor[] = [];
  // More kernels than the watermark, fewer than the queue's bound, so no op call blocks: the
  // promise is settled from the stream's thread once it drains.
  for (let i = 0; i < 600; i++) outs.push(a.matmul(a));
  const bad = fl.arange(3).indexSelect(0, fl.tensor([7], { dtype: 'i64' }));
  await fl.ready();
  await fl.sync().then(
    () => assert.unreachable('the index error was lost'),
    (e: { code?: string }) => assert.is(e.code, 'ERR_INDEX'),
  );
  const last = (await outs[599].data()) as Float32Array;
  assert.is(last[0], 16);
  for (const t of outs) t.dispose();
  bad.dispose();
  fl.syncSync();
});

test('sync iteration and syncSync still work (a loop that never awaits may block)', () => {
  const { loader, step } = setup(32 * 4);
  let n = 0;
  for (const [x, y] of loader as Iterable<fl.Tensor[]>) {
    step(x, y);
    x.dispose();
    y.dispose();
    n++;
  }
  fl.syncSync();
  assert.is(n, 4);
});

test.run();
