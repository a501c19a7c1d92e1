/**
 * PyTorch interop: state dicts saved by PyTorch load into the equivalent flockml models with no
 * renaming and give PyTorch's outputs; flockml's files load into PyTorch (strict) and every dtype
 * reads back equal. test/fixtures/safetensors_interop.py writes and checks the PyTorch side; its
 * files are also committed (test/fixtures/io/) so the first direction runs without Python.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { tempDir } from './helpers';
import { maxAbsDiff, values } from '../helpers/values';

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(__dirname, '..', 'fixtures', 'safetensors_interop.py');
const hasTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch, numpy'], { encoding: 'utf8' }).status === 0;
const { dir, cleanup } = tempDir('interop');

/** Whether the Python side can run; in CI it must (.ci/run installs python3-torch and python3-numpy). */
function pythonSideRuns(): boolean {
  if (hasTorch) return true;
  assert.not.ok(process.env.CI, 'CI must have /usr/bin/python3 with torch and numpy (.ci/run installs them)');
  console.log('  (skipped outside CI: no /usr/bin/python3 with torch)');
  return false;
}
test.after(cleanup);

const mlp = () => new fl.nn.Sequential(new fl.nn.Linear(8, 16), new fl.nn.ReLU(), new fl.nn.Linear(16, 4));
const cnn = () =>
  new fl.nn.Sequential(
    new fl.nn.Conv2d(1, 4, 3, { padding: 1 }),
    new fl.nn.BatchNorm2d(4),
    new fl.nn.ReLU(),
    new fl.nn.MaxPool2d(2),
    new fl.nn.Flatten(),
    new fl.nn.Linear(4 * 4 * 4, 3),
  );

function python(...args: string[]): Record<string, unknown> {
  const r = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', timeout: 120_000 });
  assert.is(r.status, 0, `${SCRIPT} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

async function checkPyTorchFiles(from: string): Promise<void> {
  const outputs = await fl.load(join(from, 'outputs.safetensors'));
  for (const [name, make] of [
    ['mlp', mlp],
    ['cnn', cnn],
  ] as const) {
    const model = make();
    const state = await fl.load(join(from, `${name}.safetensors`));
    assert.equal(Object.keys(state).sort(), Object.keys(model.stateDict()).sort(), `${name}: the same names as PyTorch's`);
    model.loadStateDict(state); // strict: no missing or unexpected key
    model.eval();
    const y = model.forward(outputs[`${name}.input`]) as fl.Tensor;
    const diff = maxAbsDiff(values(y), values(outputs[`${name}.output`]));
    assert.ok(diff < 1e-5, `${name}: output differs from PyTorch's by ${diff}`);
  }
}

test('PyTorch state dicts (MLP; CNN with BatchNorm) load with no renaming and match PyTorch outputs (committed files)', async () => {
  await checkPyTorchFiles(join(__dirname, '..', 'fixtures', 'io'));
});

test('PyTorch files written now by the script load and match', async () => {
  if (!pythonSideRuns()) return;
  python('write', dir);
  await checkPyTorchFiles(dir);
});

test('flockml files load into PyTorch (strict) and give flockml outputs; every dtype reads back equal', async () => {
  if (!pythonSideRuns()) return;
  fl.manualSeed(3);
  const m = mlp(),
    c = cnn();
  // Running statistics that are not the initial ones, so the buffers matter.
  c.train();
  fl.noGrad(() => c.forward(fl.randn([6, 1, 8, 8]).mul(2).add(1)));
  m.eval();
  c.eval();
  const xm = fl.randn([3, 8]),
    xc = fl.randn([2, 1, 8, 8]);
  await fl.save(m.stateDict(), join(dir, 'flock_mlp.safetensors'));
  await fl.save(c.stateDict(), join(dir, 'flock_cnn.safetensors'));
  await fl.save(
    { 'mlp.input': xm, 'mlp.output': m.forward(xm) as fl.Tensor, 'cnn.input': xc, 'cnn.output': c.forward(xc) as fl.Tensor },
    join(dir, 'flock_outputs.safetensors'),
  );
  const values = [0, 1, -2.5, 3.140625, 65504, -0.0009765625];
  const ints = [0, 1, -2, 2 ** 30, -(2 ** 30), 7];
  await fl.save(
    {
      f64: fl.tensor(values, { dtype: 'f64' }).reshape([2, 3]),
      f32: fl.tensor(values, { dtype: 'f32' }).reshape([2, 3]),
      f16: fl.tensor(values, { dtype: 'f16' }).reshape([2, 3]),
      bf16: fl.tensor(values, { dtype: 'bf16' }).reshape([2, 3]),
      i64: fl.tensor(BigInt64Array.from([0n, 1n, -2n, 1n << 40n, -(1n << 40n), 7n])).reshape([2, 3]),
      i32: fl.tensor(ints, { dtype: 'i32' }).reshape([2, 3]),
      u8: fl.tensor([0, 1, 2, 128, 255, 7], { dtype: 'u8' }).reshape([2, 3]),
      bool: fl.tensor([false, true, true, false, true, false]).reshape([2, 3]),
    },
    join(dir, 'flock_dtypes.safetensors'),
  );
  const r = python('check', dir) as {
    mlp_max_abs_diff: number;
    cnn_max_abs_diff: number;
    dtypes_equal: Record<string, boolean>;
    cnn_keys: string[];
  };
  console.log(
    `  PyTorch vs flockml: mlp max |diff| ${r.mlp_max_abs_diff}, cnn ${r.cnn_max_abs_diff}; dtypes ${JSON.stringify(r.dtypes_equal)}`,
  );
  assert.ok(r.mlp_max_abs_diff < 1e-5, `mlp: ${r.mlp_max_abs_diff}`);
  assert.ok(r.cnn_max_abs_diff < 1e-5, `cnn: ${r.cnn_max_abs_diff}`);
  assert.equal(r.dtypes_equal, { f64: true, f32: true, f16: true, bf16: true, i64: true, i32: true, u8: true, bool: true });
  assert.ok(r.cnn_keys.includes('1.running_mean') && r.cnn_keys.includes('1.num_batches_tracked'));
});

test.run();
