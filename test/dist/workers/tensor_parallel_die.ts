/**
 * A tensor-parallel peer leaves after the rendezvous: on rank 0 the ordered collectives of a
 * layer's forward and of loss.backward() must fail the ops queued after them with a coded error at
 * the next sync point (never a hang), and the Works nobody awaits must not surface as unhandled
 * rejections.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup } from '../../../lib/distributed/index';
import * as tp from '../../../lib/parallel/tensor_parallel/index';
import { errorOf } from './tensor_parallel_check';

let unhandled = 0;
process.on('unhandledRejection', (e) => {
  unhandled++;
  console.error('unhandled rejection:', e);
});

async function main() {
  const group = await initProcessGroup({ backend: 'ring', timeoutMs: Number(process.env.PG_TIMEOUT_MS ?? 30_000) });
  if (group.rank === 1) process.exit(0);
  fl.manualSeed(1);
  const col = new tp.ColumnParallelLinear(4, 2 * group.size, { group, dtype: 'f64' });
  const x = fl.randn([3, 4], { dtype: 'f64' }).requiresGrad_();
  const forward = await errorOf(() => col.forward(x).data());
  if (!forward.code) throw new Error(`forward: the read after a failed gather gave no coded error: ${forward}`);
  console.log(`rank 0: forward failed with ${forward.code}`);
  // The allreduce in copyToParallel's backward: raised by backward itself or at the read of the gradient.
  const backward = await errorOf(async () => {
    tp.copyToParallel(x, group).sum().backward();
    await (x.grad as fl.Tensor).data();
  });
  if (!backward.code) throw new Error(`backward: no coded error: ${backward}`);
  console.log(`rank 0: backward failed with ${backward.code}`);
  await new Promise((r) => setTimeout(r, 500));
  if (unhandled > 0) throw new Error(`${unhandled} unhandled rejections`);
  console.log('rank 0: no unhandled rejections');
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
