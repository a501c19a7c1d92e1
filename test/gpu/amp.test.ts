/**
 * Mixed precision on the GPU: GradScaler's unscale-and-check kernel and scale update on CUDA
 * tensors (a step with an inf gradient is skipped and the scale backs off), and a small model
 * trained under autocast (f16 with GradScaler, bf16 without) on cuda:0 against the same run on
 * the CPU. Without a GPU the file says it skipped.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';

const runs = gpuSuiteRuns('mixed precision on cuda');

if (!runs) {
  test('without a GPU: autocast on cuda is refused with ERR_DEVICE', () => {
    try {
      fl.zeros([2], { device: 'cuda:0' });
      assert.unreachable('a CUDA tensor without a GPU');
    } catch (e) {
      assert.is((e as { code?: string }).code, 'ERR_DEVICE');
    }
  });
}

if (runs) {
  test('GradScaler on cuda:0: an inf gradient skips the step and backs off; clean steps update and grow', async () => {
    const scaler = new fl.amp.GradScaler({ initScale: 2 ** 10, growthFactor: 2, backoffFactor: 0.5, growthInterval: 2 });
    const p = new fl.nn.Parameter(fl.ones([4]).to('cuda:0'));
    const opt = new fl.optim.SGD([p], { lr: 0.5 });
    const pattern = [false, true, false, false];
    const scales: number[] = [];
    for (const inf of pattern) {
      opt.zeroGrad();
      const before = p.to('cpu').toArray() as number[];
      const x = fl.tensor([1, 2, 3, inf ? Number.POSITIVE_INFINITY : 4]).to('cuda:0');
      scaler.scale(p.mul(x).sum()).backward();
      const stepped = await scaler.step(opt);
      assert.is(stepped, !inf);
      const after = p.to('cpu').toArray() as number[];
      if (inf) assert.equal(after, before);
      else
        assert.equal(
          after,
          before.map((v, k) => v - 0.5 * [1, 2, 3, 4][k]),
        );
      scaler.update();
      scales.push(scaler.getScale());
    }
    assert.equal(scales, [2 ** 10, 2 ** 9, 2 ** 9, 2 ** 10]);
  });

  for (const dtype of ['f16', 'bf16'] as const) {
    test(`autocast ${dtype} training on cuda:0 follows the same run on the CPU`, async () => {
      const train = async (device: string) => {
        fl.manualSeed(11);
        const model = new fl.nn.Sequential(new fl.nn.Linear(16, 32), new fl.nn.GELU(), new fl.nn.Linear(32, 4));
        model.to(device);
        const opt = new fl.optim.AdamW(model.parameters(), { lr: 1e-2 });
        const scaler = new fl.amp.GradScaler({ enabled: dtype === 'f16' });
        const x = fl.randn([64, 16]).to(device);
        const y = fl.randn([64, 4]).to(device);
        const losses: number[] = [];
        for (let step = 0; step < 6; step++) {
          opt.zeroGrad();
          const loss = fl.autocast({ device: device.startsWith('cuda') ? 'cuda' : 'cpu', dtype }, () =>
            fl.nn.functional.mseLoss(model.forward(x).to('f32'), y),
          );
          scaler.scale(loss).backward();
          await scaler.step(opt);
          scaler.update();
          losses.push(await loss.item());
        }
        return losses;
      };
      const cpu = await train('cpu');
      const gpu = await train('cuda:0');
      assert.ok(gpu[5] < gpu[0], `loss falls on cuda: ${gpu.join(', ')}`);
      const tol = dtype === 'f16' ? 2e-2 : 8e-2;
      gpu.forEach((l, i) => assert.ok(Math.abs(l - cpu[i]) <= tol * Math.abs(cpu[i]), `step ${i}: cuda ${l}, cpu ${cpu[i]}`));
    });
  }
}

test.run();
