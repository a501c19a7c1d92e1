/**
 * 2-D meshes on 4 ranks: coordinates and groups of a [dp, tp] = [2, 2] mesh (and a named 1-D
 * one), then data × tensor parallelism: a small transformer block (vocab-parallel embedding,
 * parallel attention, a column/row-parallel MLP, a vocab-parallel head and cross-entropy) trained
 * 10 SGD steps with each dp replica on half of every batch must end where the unsplit model
 * trained in one process on the whole batches ends.
 */
import * as fl from '../../../lib/index';
import { copy_ } from '../../../lib/ops/elementwise';
import { initProcessGroup, destroyProcessGroup, deviceMesh, type ProcessGroup } from '../../../lib/distributed/index';
import * as tp from '../../../lib/parallel/tensor_parallel/index';
import { checks, expectClose, expectError } from './tensor_parallel_check';
import { backend, dev, device } from './backend';

const V = 16,
  E = 8,
  H = 2,
  B = 8,
  T = 4,
  STEPS = 10,
  LR = 0.2;
const f64 = { dtype: 'f64' as const, device };

function expectEqual(what: string, a: unknown, b: unknown): void {
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${what}: ${JSON.stringify(a)}, expected ${JSON.stringify(b)}`);
}

function reference() {
  fl.manualSeed(1);
  const emb = new fl.nn.Embedding(V, E, f64);
  fl.manualSeed(2);
  const attn = new fl.nn.MultiheadAttention(E, H, { batchFirst: true, ...f64 });
  fl.manualSeed(3);
  const up = new fl.nn.Linear(E, 2 * E, f64);
  fl.manualSeed(4);
  const down = new fl.nn.Linear(2 * E, E, f64);
  fl.manualSeed(5);
  const head = new fl.nn.Linear(E, V, f64);
  const loss = (x: fl.Tensor, y: fl.Tensor) => {
    const e = emb.forward(x);
    const h = e.add(attn.forward(e, e, e, { needWeights: false, isCausal: true, attnMask: fl.nn.causalMask(T, device) })[0]);
    const h2 = h.add(down.forward(up.forward(h).relu()));
    return fl.nn.functional.crossEntropy(head.forward(h2).reshape([-1, V]), y.reshape([-1]));
  };
  return { emb, attn, up, down, head, loss };
}

function parallel(group: ProcessGroup) {
  fl.manualSeed(1);
  const emb = new tp.VocabParallelEmbedding(V, E, { group, ...f64 });
  fl.manualSeed(2);
  const attn = new tp.ParallelMultiheadAttention(E, H, { group, batchFirst: true, ...f64 });
  fl.manualSeed(3);
  const up = new tp.ColumnParallelLinear(E, 2 * E, { group, gatherOutput: false, ...f64 });
  fl.manualSeed(4);
  const down = new tp.RowParallelLinear(2 * E, E, { group, inputIsParallel: true, ...f64 });
  fl.manualSeed(5);
  const head = new tp.ColumnParallelLinear(E, V, { group, gatherOutput: false, ...f64 });
  const loss = (x: fl.Tensor, y: fl.Tensor) => {
    const e = emb.forward(x);
    const h = e.add(attn.forward(e, e, e, { isCausal: true }));
    const h2 = h.add(down.forward(up.forward(h).relu()));
    return tp.vocabParallelCrossEntropy(head.forward(h2), y, { group });
  };
  return { emb, attn, up, down, head, loss };
}

function sgd(params: fl.Tensor[]) {
  fl.noGrad(() => fl.tidy(() => params.forEach((p) => copy_(p, p.sub(p.grad!.mul(LR))))));
  for (const p of params) {
    p.grad?.dispose();
    p.grad = null;
  }
}

async function main() {
  const world = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const rank = world.rank;

  const mesh = await deviceMesh([2, 2]);
  expectEqual('mesh coordinate', mesh.coordinate, [Math.floor(rank / 2), rank % 2]);
  expectEqual('tp ranks', mesh.groupRanks('tp'), rank < 2 ? [0, 1] : [2, 3]);
  expectEqual('dp ranks', mesh.groupRanks(0), rank % 2 === 0 ? [0, 2] : [1, 3]);
  expectEqual('tp group', [mesh.group('tp').rank, mesh.group('tp').size], [rank % 2, 2]);
  expectEqual(
    'dp group',
    [mesh.group(-2).rank, mesh.localRank('dp'), mesh.size('dp'), mesh.size()],
    [Math.floor(rank / 2), Math.floor(rank / 2), 2, 4],
  );
  // Each group reduces over its own members only: global ranks summed along tp, then along dp.
  const t = fl.tensor([rank], f64);
  await mesh.group('tp').allReduce(t).wait();
  await expectClose('allReduce over tp', t, fl.tensor([rank < 2 ? 1 : 5], f64));
  await mesh.group('dp').allReduce(t).wait();
  await expectClose('allReduce over tp then dp', t, fl.tensor([6], f64));
  const flat = await deviceMesh([4], { dimNames: ['tp'] });
  expectEqual('1-D mesh', [flat.coordinate, flat.groupRanks('tp')], [[rank], [0, 1, 2, 3]]);
  // A 3-D mesh with a dimension of one rank: its groups hold this rank alone.
  const cube = await deviceMesh([2, 1, 2], { dimNames: ['dp', 'pp', 'tp'] });
  expectEqual(
    '3-D mesh',
    [cube.coordinate, cube.groupRanks('dp'), cube.groupRanks('pp'), cube.groupRanks('tp')],
    [[Math.floor(rank / 2), 0, rank % 2], rank % 2 === 0 ? [0, 2] : [1, 3], [rank], rank < 2 ? [0, 1] : [2, 3]],
  );
  const one = fl.tensor([rank], f64);
  await cube.group('pp').allReduce(one).wait();
  await expectClose('allReduce over a one-rank dimension', one, fl.tensor([rank], f64));
  await expectError('mesh: unknown dim', () => mesh.group('pp'), 'ERR_ARG', "no dimension named 'pp'");
  await expectError('mesh: dim out of range', () => mesh.group(2), 'ERR_INDEX', 'out of range for a 2-D mesh');
  await expectError('mesh: names', () => deviceMesh([2, 2], { dimNames: ['a', 'a'] }), 'ERR_ARG', 'distinct');

  fl.manualSeed(99);
  const xs = fl.keep(dev(fl.randint(0, V, [STEPS, B, T])));
  const ys = fl.keep(dev(fl.randint(0, V, [STEPS, B, T])));

  const ref = reference();
  const refParams = [ref.emb, ref.attn, ref.up, ref.down, ref.head].flatMap((m) => [...m.parameters()]);
  for (let s = 0; s < STEPS; s++) {
    fl.tidy(() => ref.loss(xs.narrow(0, s, 1).squeeze(0), ys.narrow(0, s, 1).squeeze(0)).backward());
    sgd(refParams);
  }

  const tpGroup = mesh.group('tp');
  const dpGroup = mesh.group('dp');
  const model = parallel(tpGroup);
  const params = [model.emb, model.attn, model.up, model.down, model.head].flatMap((m) => [...m.parameters()]);
  const half = B / 2;
  const d = mesh.localRank('dp');
  const losses: number[] = [];
  for (let s = 0; s < STEPS; s++) {
    const loss = model.loss(
      xs
        .narrow(0, s, 1)
        .squeeze(0)
        .narrow(0, d * half, half),
      ys
        .narrow(0, s, 1)
        .squeeze(0)
        .narrow(0, d * half, half),
    );
    losses.push(Number((await loss.data())[0]));
    loss.backward();
    await Promise.all(params.map((p) => dpGroup.allReduce(p.grad!, { op: 'avg' }).wait()));
    sgd(params);
  }
  if (!(losses[STEPS - 1] < losses[0])) throw new Error(`the loss did not fall: ${losses.join(', ')}`);

  // This rank's slice of each trained reference parameter.
  const { rank: r, size: n } = tpGroup;
  const part = (w: fl.Tensor, dim: number) => w.narrow(dim, (r * w.shape[dim]) / n, w.shape[dim] / n);
  const qkv = (w: fl.Tensor) =>
    fl.cat(
      [0, 1, 2].map((i) => part(w.narrow(0, i * E, E), 0)),
      0,
    );
  const pairs: [string, fl.Tensor, fl.Tensor][] = [
    ['embedding', model.emb.weight, part(ref.emb.weight, 0)],
    ['in_proj_weight', model.attn.in_proj_weight!, qkv(ref.attn.in_proj_weight!)],
    ['in_proj_bias', model.attn.in_proj_bias!, qkv(ref.attn.in_proj_bias!)],
    ['out_proj weight', model.attn.out_proj.weight, part(ref.attn.out_proj.weight, 1)],
    ['out_proj bias', model.attn.out_proj.bias!, ref.attn.out_proj.bias!],
    ['up weight', model.up.weight, part(ref.up.weight, 0)],
    ['up bias', model.up.bias!, part(ref.up.bias!, 0)],
    ['down weight', model.down.weight, part(ref.down.weight, 1)],
    ['down bias', model.down.bias!, ref.down.bias!],
    ['head weight', model.head.weight, part(ref.head.weight, 0)],
    ['head bias', model.head.bias!, part(ref.head.bias!, 0)],
  ];
  for (const [what, mine, want] of pairs) await expectClose(`after ${STEPS} steps: ${what}`, mine, want, 1e-8);

  console.log(
    `rank ${rank}: ${checks} checks passed (${backend}, ${device}); loss ${losses[0].toFixed(4)} → ${losses[STEPS - 1].toFixed(4)}`,
  );
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
