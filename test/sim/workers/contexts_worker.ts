/**
 * Trains a small model split over cuda:1 and cuda:2 (a Pipeline of two stages), all-reduces over
 * an NCCL clique of the two, moves tensors between them and the host, asks for memory info and
 * empties the caches, then prints the simulator's device state. Run by test/sim/contexts.test.ts in a fresh process, so nothing else
 * has touched any device.
 */
import * as fl from '../../../lib/index';
import { native } from '../../../lib/native';

async function main(): Promise<void> {
  // First, before anything else touches CUDA: an NCCL clique over cuda:1 and cuda:2 (each group's
  // stream gate allocates pinned memory, which goes through some device's context).
  const groups = await fl.distributed.initLocalGroups([1, 2], { timeoutMs: 30_000 });
  const parts = [fl.full([8], 1, { device: 'cuda:1' }), fl.full([8], 2, { device: 'cuda:2' })];
  await Promise.all(groups.map((g, i) => g.allReduce(parts[i]).wait()));
  if ((await parts[0].to('cpu').data())[0] !== 3) throw new Error('allReduce on cuda:1 and cuda:2 gave the wrong sum');
  for (const g of groups) g.destroy();
  fl.manualSeed(3);
  const stages = [new fl.nn.Sequential(new fl.nn.Linear(8, 16), new fl.nn.ReLU()), new fl.nn.Linear(16, 4)];
  const pipe = new fl.parallel.Pipeline(stages, { devices: ['cuda:1', 'cuda:2'], microBatches: 2 });
  const opt = new fl.optim.SGD(pipe.parameters(), { lr: 0.1 });
  const x = fl.randn([4, 8]);
  const y = fl.randn([4, 4]);
  for (let step = 0; step < 2; step++) {
    opt.zeroGrad();
    await pipe.step(x, y, (out, target) => fl.nn.functional.mseLoss(out, target));
    await opt.step();
  }
  const a = fl.randn([32, 32]).to('cuda:1');
  const b = a.matmul(a).softmax(-1).to('cuda:2');
  await b.to('cpu').data();
  fl.cuda.memoryInfo(1);
  fl.emptyCache('cuda:1');
  await fl.sync('cuda:1');
  await fl.sync('cuda:2');
  process.stdout.write(`${native.cudaSimState()}\n`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
