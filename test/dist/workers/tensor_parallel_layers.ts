/**
 * Every tensor-parallel layer against its unsplit counterpart built from the same seed, on all the
 * ranks of the world as one tensor-parallel group: forward outputs, input gradients and weight
 * gradients (this rank's slice of the unsplit layer's), in f64, all through the synchronous API
 * and plain loss.backward(). Then the layers inside nn.Sequential trained end to end, and the
 * refusals: indices out of range and sizes that do not divide.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup, deviceMesh } from '../../../lib/distributed/index';
import * as tp from '../../../lib/parallel/tensor_parallel/index';
import { checks, expectClose, expectError } from './tensor_parallel_check';

// FLOCKML_TEST_BACKEND=nccl: one CUDA device per rank (cuda:LOCAL_RANK); the ring backend on the CPU otherwise.
import { backend, device } from './backend';

const f64 = { dtype: 'f64' as const, device };
const i64 = { dtype: 'i64' as const, device };

function leaf(shape: number[], seed: number): fl.Tensor {
  fl.manualSeed(seed);
  return fl.keep(fl.randn(shape, f64)).requiresGrad_();
}

/** A fixed random projection of `y` to a scalar, so every output element gets its own gradient. */
function project(y: fl.Tensor, seed: number): fl.Tensor {
  fl.manualSeed(seed);
  return y.mul(fl.randn([...y.shape], f64)).sum();
}

const rows = (t: fl.Tensor, dim: number, rank: number, size: number) => t.narrow(dim, (rank * t.shape[dim]) / size, t.shape[dim] / size);

async function main() {
  const group = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const { rank, size } = group;

  // The conjugate operators alone, with rank-dependent values (weights r + 1 on rank r).
  {
    const w = rank + 1;
    const total = (size * (size + 1)) / 2;
    const x = leaf([2, 2 * size], 30);
    tp.copyToParallel(x, group).mul(w).sum().backward();
    await expectClose('copyToParallel: gradient summed over the group', x.grad!, fl.full([2, 2 * size], total, f64));
    const x2 = leaf([2, 2 * size], 31);
    const reduced = tp.reduceFromParallel(x2.mul(w), group);
    await expectClose('reduceFromParallel: forward sum', reduced, x2.mul(total));
    reduced.sum().backward();
    await expectClose('reduceFromParallel: identity backward', x2.grad!, fl.full([2, 2 * size], w, f64));
    const x3 = leaf([2, 2 * size], 32);
    const mine = tp.scatterToParallel(x3, group);
    await expectClose("scatterToParallel: this rank's slice", mine, rows(x3, 1, rank, size));
    mine.mul(w).sum().backward();
    const chunkWeights = fl.tensor([Array.from({ length: 2 * size }, (_, j) => Math.floor(j / 2) + 1)], f64);
    await expectClose('scatterToParallel: gradient gathered', x3.grad!, chunkWeights.expand([2, 2 * size]));
    const x4 = leaf([2, 2 * size], 33);
    const gathered = tp.gatherFromParallel(rows(x4, 1, rank, size), group);
    await expectClose('gatherFromParallel: forward', gathered, x4);
    gathered.mul(chunkWeights).sum().backward();
    await expectClose(
      'gatherFromParallel: backward slices',
      rows(x4.grad!, 1, rank, size),
      rows(chunkWeights.expand([2, 2 * size]), 1, rank, size),
    );
    await expectClose('gatherFromParallel: nothing outside the slice', x4.grad!.abs().sum(), rows(x4.grad!, 1, rank, size).abs().sum());
  }

  // The operators as modules inside nn.Sequential: scatter → a rank-weighted scale → gather gives
  // every rank's slice scaled by its own weight; copy → reduce sums x over the group.
  {
    const w = rank + 1;
    const chunkWeights = fl.tensor([Array.from({ length: 2 * size }, (_, j) => Math.floor(j / 2) + 1)], f64);
    const scale = new fl.nn.Sequential(
      new tp.ScatterToParallel({ group }),
      new (class extends fl.nn.Module {
        forward(x: fl.Tensor) {
          return x.mul(w);
        }
      })(),
      new tp.GatherFromParallel({ group }),
    );
    const x = leaf([2, 2 * size], 34);
    const y = scale.forward(x);
    await expectClose('modules: scatter → scale → gather forward', y, x.mul(chunkWeights));
    y.sum().backward();
    await expectClose('modules: scatter → scale → gather gradient', x.grad!, chunkWeights.expand([2, 2 * size]));
    const x2 = leaf([3], 35);
    const summed = new fl.nn.Sequential(new tp.CopyToParallel({ group }), new tp.ReduceFromParallel({ group })).forward(x2);
    await expectClose('modules: copy → reduce forward', summed, x2.mul(size));
    summed.mul(w).sum().backward();
    await expectClose('modules: copy → reduce gradient', x2.grad!, fl.full([3], (size * (size + 1)) / 2, f64));
    await expectError('modules: no group', () => new tp.CopyToParallel({} as never), 'ERR_ARG', 'group must be a ProcessGroup');
  }

  // ColumnParallelLinear, gathered output.
  {
    fl.manualSeed(1);
    const ref = new fl.nn.Linear(6, 8, f64);
    fl.manualSeed(1);
    const col = new tp.ColumnParallelLinear(6, 8, { group, ...f64 });
    const x = leaf([3, 6], 2);
    const xr = leaf([3, 6], 2);
    const y = col.forward(x);
    const yr = ref.forward(xr);
    await expectClose('column: output', y, yr);
    project(y, 3).backward();
    project(yr, 3).backward();
    await expectClose('column: input grad', x.grad!, xr.grad!);
    await expectClose('column: weight grad', col.weight.grad!, rows(ref.weight.grad!, 0, rank, size));
    await expectClose('column: bias grad', col.bias!.grad!, rows(ref.bias!.grad!, 0, rank, size));
  }

  // MLP: ColumnParallelLinear (no gather) → gelu → RowParallelLinear (parallel input).
  {
    fl.manualSeed(4);
    const r1 = new fl.nn.Linear(4, 8, f64);
    const r2 = new fl.nn.Linear(8, 4, f64);
    fl.manualSeed(4);
    const c1 = new tp.ColumnParallelLinear(4, 8, { group, gatherOutput: false, ...f64 });
    const c2 = new tp.RowParallelLinear(8, 4, { group, inputIsParallel: true, ...f64 });
    const x = leaf([2, 3, 4], 5);
    const xr = leaf([2, 3, 4], 5);
    const y = c2.forward(c1.forward(x).gelu());
    const yr = r2.forward(r1.forward(xr).gelu());
    await expectClose('mlp: output', y, yr);
    project(y, 6).backward();
    project(yr, 6).backward();
    await expectClose('mlp: input grad', x.grad!, xr.grad!);
    await expectClose('mlp: column weight grad', c1.weight.grad!, rows(r1.weight.grad!, 0, rank, size));
    await expectClose('mlp: column bias grad', c1.bias!.grad!, rows(r1.bias!.grad!, 0, rank, size));
    await expectClose('mlp: row weight grad', c2.weight.grad!, rows(r2.weight.grad!, 1, rank, size));
    await expectClose('mlp: row bias grad', c2.bias!.grad!, r2.bias!.grad!);
  }

  // RowParallelLinear on a full input (scattered), no bias.
  {
    fl.manualSeed(7);
    const ref = new fl.nn.Linear(8, 3, { bias: false, ...f64 });
    fl.manualSeed(7);
    const row = new tp.RowParallelLinear(8, 3, { group, bias: false, ...f64 });
    const x = leaf([5, 8], 8);
    const xr = leaf([5, 8], 8);
    const y = row.forward(x);
    const yr = ref.forward(xr);
    await expectClose('row: output', y, yr);
    project(y, 9).backward();
    project(yr, 9).backward();
    await expectClose('row: input grad', x.grad!, xr.grad!);
    await expectClose('row: weight grad', row.weight.grad!, rows(ref.weight.grad!, 1, rank, size));
  }

  // VocabParallelEmbedding.
  {
    fl.manualSeed(10);
    const ref = new fl.nn.Embedding(12, 5, f64);
    fl.manualSeed(10);
    const emb = new tp.VocabParallelEmbedding(12, 5, { group, ...f64 });
    const idx = fl.tensor(
      [
        [0, 11, 3, 3],
        [7, 6, 1, 10],
      ],
      i64,
    );
    const y = emb.forward(idx);
    const yr = ref.forward(idx);
    await expectClose('embedding: output', y, yr);
    project(y, 11).backward();
    project(yr, 11).backward();
    await expectClose('embedding: weight grad', emb.weight.grad!, rows(ref.weight.grad!, 0, rank, size));
    // The lookup fails on every rank, at the next sync point, and the group stays usable.
    await expectError('embedding: index out of range', () => emb.forward(fl.tensor([12], i64)).data(), 'ERR_INDEX', 'out of range');
    await expectError('embedding: negative index', () => emb.forward(fl.tensor([-1], i64)).data(), 'ERR_INDEX', 'out of range');
  }

  // vocabParallelCrossEntropy against crossEntropy of the whole logits, each reduction, with ignored targets.
  for (const [reduction, labelSmoothing] of [
    ['mean', 0],
    ['sum', 0],
    ['none', 0],
    ['mean', 0.1],
  ] as const) {
    const full = leaf([6, 8], 12);
    const fullRef = leaf([6, 8], 12);
    const target = fl.tensor([0, 7, 3, -100, 4, 5], i64);
    const mine = full.narrow(1, rank * (8 / size), 8 / size);
    const loss = tp.vocabParallelCrossEntropy(mine, target, { group, reduction, labelSmoothing });
    const lossRef = fl.nn.functional.crossEntropy(fullRef, target, { reduction, labelSmoothing });
    await expectClose(`cross-entropy ${reduction}, smoothing ${labelSmoothing}: loss`, loss, lossRef);
    (reduction === 'none' ? project(loss, 13) : loss).backward();
    (reduction === 'none' ? project(lossRef, 13) : lossRef).backward();
    await expectClose(
      `cross-entropy ${reduction}, smoothing ${labelSmoothing}: logit grad`,
      rows(full.grad!, 1, rank, size),
      rows(fullRef.grad!, 1, rank, size),
    );
  }
  await expectError(
    'cross-entropy: target out of range',
    () => tp.vocabParallelCrossEntropy(fl.zeros([1, 8 / size], f64), fl.tensor([8], i64), { group }).data(),
    'ERR_INDEX',
    'out of range',
  );
  await expectError(
    'cross-entropy: negative target',
    () => tp.vocabParallelCrossEntropy(fl.zeros([2, 8 / size], f64), fl.tensor([1, -5], i64), { group }).data(),
    'ERR_INDEX',
    'out of range',
  );

  // ParallelMultiheadAttention against nn.MultiheadAttention: self-attention (fused in_proj), then
  // cross-attention with a key padding mask and a causal cut, batchFirst.
  for (const cross of [false, true]) {
    const H = 4;
    fl.manualSeed(14);
    const ref = new fl.nn.MultiheadAttention(8, H, { ...f64, batchFirst: cross });
    fl.manualSeed(14);
    const par = new tp.ParallelMultiheadAttention(8, H, { group, ...f64, batchFirst: cross });
    const q = leaf([3, 2, 8], 15);
    const qr = leaf([3, 2, 8], 15);
    const kv = leaf([3, 2, 8], 16);
    const kvr = leaf([3, 2, 8], 16);
    const kpm = fl.tensor(Uint8Array.from([0, 0, 0, 1, 0, 0]), { dtype: 'bool', shape: [3, 2], device });
    const opts = cross ? { keyPaddingMask: kpm, isCausal: true } : {};
    const y = cross ? par.forward(q, kv, kv, opts) : par.forward(q, q, q);
    const [yr] = cross
      ? ref.forward(qr, kvr, kvr, { ...opts, needWeights: false, attnMask: fl.nn.causalMask(2, device) })
      : ref.forward(qr, qr, qr, { needWeights: false });
    const what = cross ? 'cross-attention' : 'self-attention';
    await expectClose(`${what}: output`, y, yr);
    project(y, 17).backward();
    project(yr, 17).backward();
    await expectClose(`${what}: query grad`, q.grad!, qr.grad!);
    if (cross) await expectClose(`${what}: key/value grad`, kv.grad!, kvr.grad!);
    const E = 8;
    const refIn = ref.in_proj_weight!.grad!;
    const mineIn = fl.cat(
      [0, 1, 2].map((i) => rows(refIn.narrow(0, i * E, E), 0, rank, size)),
      0,
    );
    await expectClose(`${what}: in_proj_weight grad`, par.in_proj_weight!.grad!, mineIn);
    const refInB = ref.in_proj_bias!.grad!;
    await expectClose(
      `${what}: in_proj_bias grad`,
      par.in_proj_bias!.grad!,
      fl.cat(
        [0, 1, 2].map((i) => rows(refInB.narrow(0, i * E, E), 0, rank, size)),
        0,
      ),
    );
    await expectClose(`${what}: out_proj weight grad`, par.out_proj.weight.grad!, rows(ref.out_proj.weight.grad!, 1, rank, size));
    await expectClose(`${what}: out_proj bias grad`, par.out_proj.bias!.grad!, ref.out_proj.bias!.grad!);
  }

  // Key and value of other widths (kdim, vdim): separate q, k and v projections, each split by heads.
  {
    fl.manualSeed(18);
    const ref = new fl.nn.MultiheadAttention(8, 4, { ...f64, kdim: 6, vdim: 4 });
    fl.manualSeed(18);
    const par = new tp.ParallelMultiheadAttention(8, 4, { group, ...f64, kdim: 6, vdim: 4 });
    const q = leaf([3, 2, 8], 19);
    const qr = leaf([3, 2, 8], 19);
    const k = leaf([5, 2, 6], 20);
    const kr = leaf([5, 2, 6], 20);
    const v = leaf([5, 2, 4], 21);
    const vr = leaf([5, 2, 4], 21);
    const y = par.forward(q, k, v);
    const [yr] = ref.forward(qr, kr, vr, { needWeights: false });
    await expectClose('kdim/vdim: output', y, yr);
    project(y, 22).backward();
    project(yr, 22).backward();
    for (const [name, mine, want] of [
      ['query', q, qr],
      ['key', k, kr],
      ['value', v, vr],
    ] as const)
      await expectClose(`kdim/vdim: ${name} grad`, mine.grad!, want.grad!);
    for (const name of ['q_proj_weight', 'k_proj_weight', 'v_proj_weight'] as const)
      await expectClose(`kdim/vdim: ${name} grad`, par[name]!.grad!, rows(ref[name]!.grad!, 0, rank, size));
  }

  // Parameter names are nn.MultiheadAttention's (a sharded state dict keeps PyTorch's keys).
  {
    const par = new tp.ParallelMultiheadAttention(8, 4, { group, device });
    const names = Object.keys(par.stateDict()).sort().join(',');
    const want = Object.keys(new fl.nn.MultiheadAttention(8, 4, { device }).stateDict())
      .sort()
      .join(',');
    if (names !== want) throw new Error(`attention state-dict keys: ${names}, expected ${want}`);
  }

  // Dropout in parallel attention draws from the tensor-parallel generator: masks change from call
  // to call, the output differs from eval mode, and the global generator does not move.
  {
    fl.manualSeed(20);
    const par = new tp.ParallelMultiheadAttention(8, 4, { group, dropout: 0.5, ...f64 });
    const q = leaf([3, 2, 8], 21);
    const before = JSON.stringify(fl.getRngState());
    const a = par.forward(q, q, q);
    const b = par.forward(q, q, q);
    if (JSON.stringify(fl.getRngState()) !== before) throw new Error('attention dropout moved the global generator');
    par.eval();
    const c = par.forward(q, q, q);
    const same = async (x: fl.Tensor, y: fl.Tensor) => (await x.sub(y).abs().max().item()) < 1e-12;
    if ((await same(a, b)) || (await same(a, c))) throw new Error('attention dropout drew no fresh mask');
  }

  // loss.backward() through the collectives: leaf hooks fire once with the final gradient, retainGraph lets a
  // second pass accumulate, and without it a second pass is refused.
  {
    fl.manualSeed(1);
    const ref = new fl.nn.Linear(4, 2 * size, f64);
    fl.manualSeed(1);
    const col = new tp.ColumnParallelLinear(4, 2 * size, { group, ...f64 });
    const x = leaf([3, 4], 2);
    const xr = leaf([3, 4], 2);
    let hooked = 0;
    x.registerHook((g) => {
      hooked++;
      return g.mul(2);
    });
    const loss = project(col.forward(x), 3);
    loss.backward({ retainGraph: true });
    loss.backward();
    project(ref.forward(xr), 3).backward();
    if (hooked !== 2) throw new Error(`the input's hook ran ${hooked} times, expected 2`);
    await expectClose('backward: hooked input grad over two passes', x.grad!, xr.grad!.mul(4));
    await expectClose('backward: weight grad over two passes', col.weight.grad!, rows(ref.weight.grad!, 0, rank, size).mul(2));
    await expectError('backward: a released graph', () => loss.backward(), 'ERR_AUTOGRAD', 'second time');
  }

  // The layers inside nn.Sequential, trained end to end with loss.backward() and an optimizer:
  // a vocab-parallel embedding, a column/row-parallel MLP and a vocab-parallel head against the
  // unsplit model, two SGD steps, then the next loss, the logit gradient... all compared.
  {
    const V = 4 * size;
    const build = (parallel: boolean) => {
      const seeded = <T>(seed: number, make: () => T) => {
        fl.manualSeed(seed);
        return make();
      };
      return new fl.nn.Sequential(
        seeded(40, () => (parallel ? new tp.VocabParallelEmbedding(V, 6, { group, ...f64 }) : new fl.nn.Embedding(V, 6, f64))),
        seeded(41, () =>
          parallel ? new tp.ColumnParallelLinear(6, 4 * size, { group, gatherOutput: false, ...f64 }) : new fl.nn.Linear(6, 4 * size, f64),
        ),
        new fl.nn.GELU(),
        seeded(42, () =>
          parallel ? new tp.RowParallelLinear(4 * size, 6, { group, inputIsParallel: true, ...f64 }) : new fl.nn.Linear(4 * size, 6, f64),
        ),
        seeded(43, () =>
          parallel ? new tp.ColumnParallelLinear(6, V, { group, gatherOutput: false, ...f64 }) : new fl.nn.Linear(6, V, f64),
        ),
      );
    };
    const model = build(true);
    const ref = build(false);
    const opt = new fl.optim.SGD([...model.parameters()], { lr: 0.5 });
    const optRef = new fl.optim.SGD([...ref.parameters()], { lr: 0.5 });
    fl.manualSeed(44);
    const idx = fl.randint(0, V, [3, 5], { device });
    const target = fl.randint(0, V, [3, 5], { device });
    for (let step = 0; step < 3; step++) {
      opt.zeroGrad();
      optRef.zeroGrad();
      const loss = tp.vocabParallelCrossEntropy(model.forward(idx), target, { group });
      const lossRef = fl.nn.functional.crossEntropy(ref.forward(idx).reshape([-1, V]), target.reshape([-1]));
      await expectClose(`sequential step ${step}: loss`, loss, lossRef);
      loss.backward();
      lossRef.backward();
      const head = model.at(4) as tp.ColumnParallelLinear;
      await expectClose(
        `sequential step ${step}: head weight grad`,
        head.weight.grad!,
        rows((ref.at(4) as fl.nn.Linear).weight.grad!, 0, rank, size),
      );
      const embedding = model.at(0) as tp.VocabParallelEmbedding;
      await expectClose(
        `sequential step ${step}: embedding grad`,
        embedding.weight.grad!,
        rows((ref.at(0) as fl.nn.Embedding).weight.grad!, 0, rank, size),
      );
      opt.step();
      optRef.step();
    }
  }
  if (size > 1) {
    const odd = 2 * size + 1;
    await expectError(
      'column: outFeatures',
      () => new tp.ColumnParallelLinear(4, odd, { group }),
      'ERR_SHAPE',
      `outFeatures ${odd} must be divisible`,
    );
    await expectError(
      'row: inFeatures',
      () => new tp.RowParallelLinear(odd, 4, { group }),
      'ERR_SHAPE',
      `inFeatures ${odd} must be divisible`,
    );
    await expectError(
      'embedding: rows',
      () => new tp.VocabParallelEmbedding(odd, 4, { group }),
      'ERR_SHAPE',
      `numEmbeddings ${odd} must be divisible`,
    );
    await expectError(
      'attention: heads',
      () => new tp.ParallelMultiheadAttention(odd * 2, odd, { group }),
      'ERR_SHAPE',
      `numHeads ${odd} must be divisible`,
    );
    await expectError(
      'scatter: last dim',
      () => tp.scatterToParallel(fl.zeros([2, odd], f64), group),
      'ERR_SHAPE',
      'divisible by the group size',
    );
  }
  await expectError(
    'attention: needWeights',
    () =>
      new tp.ParallelMultiheadAttention(8, 4, { group, device }).forward(
        fl.zeros([2, 8], f64),
        fl.zeros([2, 8], f64),
        fl.zeros([2, 8], f64),
        { needWeights: true } as never,
      ),
    'ERR_ARG',
    'needWeights must be false',
  );
  await expectError('column: no group', () => new tp.ColumnParallelLinear(4, 4, {} as never), 'ERR_ARG', 'group must be a ProcessGroup');
  await expectError(
    'column: unknown option',
    () => new tp.ColumnParallelLinear(4, 4, { group, gather: true } as never),
    'ERR_ARG',
    'gatherOutput',
  );
  await expectError('mesh: wrong size', () => deviceMesh([size + 1]), 'ERR_SHAPE', `holds ${size + 1} ranks but the world has ${size}`);

  console.log(`rank ${rank}: ${checks} checks passed`);
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
