/**
 * A clique of groups in one process posts each collective from one JS thread, group after group.
 * Work queued on a device after its group's post waits at a gate until every group has posted; if
 * the thread queued more than the stream's bound (1024 tasks) there before posting the other
 * groups, the stream used to block it behind that gate, which only its own next post could open: a
 * hang, then a misleading ERR_TIMEOUT. Needs two CUDA devices and NCCL (the simulator has both).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { gpuSuiteRuns } from './gpu_present';

if (gpuSuiteRuns('nccl gate') && native.ncclInfo().available && fl.cuda.deviceCount() >= 2) {
  test('2000 ops queued on cuda:0 between the two groups posting an allReduce run without a hang', async () => {
    const groups = await fl.distributed.initLocalGroups([0, 1], { timeoutMs: 20_000 });
    const a = fl.full([16], 1, { device: 'cuda:0' });
    const b = fl.full([16], 2, { device: 'cuda:1' });
    const w0 = groups[0].allReduce(a);
    let x = fl.zeros([16], { device: 'cuda:0' });
    for (let i = 0; i < 2000; i++) x = x.add(1);
    const w1 = groups[1].allReduce(b);
    await Promise.all([w0.wait(), w1.wait()]);
    assert.equal(Array.from((await a.to('cpu').data()) as Float32Array), Array(16).fill(3));
    assert.equal(Array.from((await x.to('cpu').data()) as Float32Array), Array(16).fill(2000));
    for (const g of groups) g.destroy();
  });
} else {
  test('needs two CUDA devices and NCCL: nothing to check here', () => {
    assert.ok(!fl.cuda.isAvailable() || fl.cuda.deviceCount() < 2 || !native.ncclInfo().available);
  });
}

test.run();
