/**
 * Defects of the CUDA host code that only a GPU run (or the simulator) could show, each with the
 * test that failed before its fix:
 *  - OOM while memory is about to be freed (a stream keeps each task's inputs until its kernels
 *    finish; another stream's stream-ordered free may still be queued): the allocator now waits for
 *    the device and releases finished work before reporting ERR_OOM (it used to fail at once);
 *  - a refused cudaMemPoolSetAccess (fault-injected) used to leave the device unusable: every
 *    later allocation retried the configuration and failed with ERR_CUDA;
 *  - CUDA-to-CUDA .to() used to wait on the JS thread for all work queued on the source device.
 */
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { addonSource } from '../../lib/native';

const MiB = 1 << 20;

test('near the memory cap, a step that frees as it goes runs instead of failing with ERR_OOM', () => {
  // 80 MiB on this device; each multiplication makes a 32 MiB tensor and drops the previous one.
  // The stream keeps each task's inputs until its kernels finish, so when the third tensor is
  // allocated the first is still held: the allocator must wait for the device and release the
  // finished work's storages before it gives up (it used to fail at once).
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `
      const n = require(${JSON.stringify(addonSource.path)});
      try {
        let t = n.full([8 * 1024 * 1024], 'f32', 'cuda:0', 1.0001);
        for (let i = 0; i < 8; i++) { const u = n.binary('mul', t, t); n.dispose(t); t = u; }
        n.syncSync('cuda:0');
        console.log('ran');
      } catch (e) {
        console.log('failed', e.code, e.message);
      }
      `,
    ],
    { encoding: 'utf8', env: { ...process.env, FLOCKML_CUDA_SIM_MEMORY: `${80 * MiB}` }, timeout: 120_000 },
  );
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /^ran$/m, `${r.stdout}${r.stderr}`);
});

test('a refused cudaMemPoolSetAccess leaves the device usable (the peer simply gets no access)', () => {
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `
      const n = require(${JSON.stringify(addonSource.path)});
      const outs = [];
      for (let i = 0; i < 2; i++) {
        try { const t = n.full([4], 'f32', 'cuda:0', 1); n.syncSync('cuda:0'); n.dispose(t); outs.push('ok'); }
        catch (e) { outs.push(e.code); }
      }
      console.log(outs.join(','));
      `,
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, FLOCKML_CUDA_SIM_FAIL: 'cudaMemPoolSetAccess:1', FLOCKML_CUDA_SIM_DEVICES: '2' },
      timeout: 60_000,
    },
  );
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.is(r.stdout.trim(), 'ok,ok');
});

test('cuda:0 to cuda:1 returns while the source device is still busy', async () => {
  const a = fl.randn([256, 256]).to('cuda:0');
  await fl.sync('cuda:0');
  // Work that keeps the simulated cuda:0 busy for a good while.
  const timed = () => {
    let x = a;
    for (let i = 0; i < 24; i++) x = x.matmul(a).mul(1 / 256);
    return x;
  };
  let started = Date.now();
  timed();
  await fl.sync('cuda:0');
  const busy = Date.now() - started;
  const x = timed();
  started = Date.now();
  const y = x.to('cuda:1');
  const returned = Date.now() - started;
  await fl.sync('cuda:1');
  assert.ok(returned < busy / 4, `.to('cuda:1') took ${returned} ms; the queued work takes ${busy} ms`);
  const want = x.to('cpu').dataSync() as Float32Array;
  const got = y.to('cpu').dataSync() as Float32Array;
  assert.equal(Array.from(got.slice(0, 16)), Array.from(want.slice(0, 16)));
});

test.run();
