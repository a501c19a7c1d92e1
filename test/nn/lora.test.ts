import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../../lib';
import { close, type FixtureTensor, fixtureFile, load, throwsCode } from '../fixtures/load';

import { nn } from '../../lib';

const { lora } = nn;
const fx = fixtureFile('lora');

/** GPT-2's Conv1D: y = x·W + b with W stored [in, out]. */
class Conv1D extends nn.Module {
  weight: nn.Parameter;
  bias: nn.Parameter;
  constructor(nf: number, nx: number, dtype: fl.DType = 'f32') {
    super();
    this.weight = new nn.Parameter(fl.randn([nx, nf], { dtype }).mul(0.3));
    this.bias = new nn.Parameter(fl.zeros([nf], { dtype }));
  }
  forward(x: fl.Tensor): fl.Tensor {
    return x.matmul(this.weight).add(this.bias);
  }
}

class MLP extends nn.Module {
  fc1: nn.Module & { forward(x: fl.Tensor): fl.Tensor };
  fc2: nn.Module & { forward(x: fl.Tensor): fl.Tensor };
  constructor(conv1d = false, dtype: fl.DType = 'f32') {
    super();
    this.fc1 = conv1d ? new Conv1D(6, 4, dtype) : new nn.Linear(4, 6, { dtype });
    this.fc2 = conv1d ? new Conv1D(3, 6, dtype) : new nn.Linear(6, 3, { dtype });
  }
  forward(x: fl.Tensor): fl.Tensor {
    return this.fc2.forward(this.fc1.forward(x).tanh());
  }
}

/** A block tree as a small transformer has: layers.N.attn.{q_proj,k_proj,v_proj}, layers.N.mlp. */
class Attn extends nn.Module {
  q_proj = new nn.Linear(8, 8);
  k_proj = new nn.Linear(8, 8);
  v_proj = new nn.Linear(8, 8);
  forward(x: fl.Tensor): fl.Tensor {
    return this.q_proj.forward(x).add(this.k_proj.forward(x)).mul(this.v_proj.forward(x));
  }
}
class Block extends nn.Module {
  attn = new Attn();
  norm = new nn.LayerNorm([8]);
  mlp = new nn.Linear(8, 8);
  forward(x: fl.Tensor): fl.Tensor {
    const h = x.add(this.attn.forward(this.norm.forward(x)));
    return h.add(this.mlp.forward(h).relu());
  }
}
class Net extends nn.Module {
  emb = new nn.Embedding(20, 8);
  layers = new nn.ModuleList([new Block(), new Block()]);
  head = new nn.Linear(8, 20, { bias: false });
  forward(ids: fl.Tensor): fl.Tensor {
    let h = this.emb.forward(ids);
    for (const b of this.layers) h = (b as Block).forward(h);
    return this.head.forward(h);
  }
}

function fixtureModel(c: Record<string, unknown>): MLP {
  const m = new MLP(c.fanInFanOut as boolean, 'f64');
  const base: Record<string, fl.Tensor> = {};
  for (const [k, v] of Object.entries(c.base as Record<string, FixtureTensor>)) base[k] = load(v);
  m.loadStateDict(base);
  lora.apply(m, { r: c.r as number, alpha: c.alpha as number, targets: ['fc1', 'fc2'], fanInFanOut: c.fanInFanOut as boolean });
  const own = lora.stateDict(m);
  fl.noGrad(() => {
    for (const [k, v] of Object.entries(c.adapters as Record<string, FixtureTensor>)) own[k].copy_(load(v));
  });
  return m;
}

for (const name of ['linear', 'conv1d']) {
  test(`${name}: output, adapter gradients and merged weights equal PyTorch's (PEFT's math, f64)`, () => {
    const c = fx[name];
    const m = fixtureModel(c);
    const x = load(c.x, 'f64', true);
    const y = m.forward(x);
    close(y, c.y, 1e-12, 'output');
    y.mul(load(c.gy)).sum().backward();
    close(x.grad as fl.Tensor, c.grads.x, 1e-12, 'grad x');
    const own = lora.stateDict(m);
    for (const [k, g] of Object.entries(c.grads as Record<string, FixtureTensor>)) {
      if (k === 'x') continue;
      assert.ok(own[k].grad, `${k} has a gradient`);
      close(own[k].grad as fl.Tensor, g, 1e-12, `grad ${k}`);
    }
    for (const [path, a] of lora.adapters(m)) {
      assert.is(a.baseWeight.grad, null, `${path}: frozen base weight gets no gradient`);
      assert.is(a.baseWeight.requiresGrad, false);
    }
    const before = m.stateDict()['fc1.base_layer.weight'].dataSync().slice();
    lora.merge(m);
    const sd = m.stateDict();
    close(sd['fc1.base_layer.weight'], c.merged['fc1.weight'], 1e-14, 'merged fc1');
    close(sd['fc2.base_layer.weight'], c.merged['fc2.weight'], 1e-14, 'merged fc2');
    close(
      fl.noGrad(() => m.forward(load(c.x))),
      c.y,
      1e-12,
      'merged output',
    );
    lora.unmerge(m);
    close(
      m.stateDict()['fc1.base_layer.weight'],
      { shape: c.base['fc1.weight'].shape, data: Array.from(before, Number) },
      1e-15,
      'unmerged',
    );
  });
}

test('apply: suffix targets in nested containers, every other parameter frozen, fresh adapters change nothing', () => {
  fl.manualSeed(1);
  const net = new Net();
  const ids = fl.tensor([[1, 2, 3, 4]], { dtype: 'i64' });
  const ref = fl.noGrad(() => net.forward(ids)).dataSync();
  lora.apply(net, { r: 4, alpha: 8, targets: ['q_proj', 'v_proj'] });
  const names = [...lora.adapters(net)].map(([p]) => p);
  assert.equal(names, ['layers.0.attn.q_proj', 'layers.0.attn.v_proj', 'layers.1.attn.q_proj', 'layers.1.attn.v_proj']);
  const trainable = [...net.namedParameters()].filter(([, p]) => p.requiresGrad).map(([n]) => n);
  assert.equal(trainable.length, 8);
  assert.ok(trainable.every((n) => /\.lora_[AB]\.weight$/.test(n)));
  assert.is(net.numParameters({ trainableOnly: true }), 4 * (4 * 8 + 8 * 4));
  assert.equal(fl.noGrad(() => net.forward(ids)).dataSync(), ref, 'B = 0: the adapted model equals the base');
  const a = [...lora.adapters(net)][0][1];
  const bound = 1 / Math.sqrt(8); // kaiming_uniform(a=√5) on [r, in]: U(±1/√in)
  assert.ok((a.lora_A.weight.dataSync() as Float32Array).every((v) => Math.abs(v) <= bound));
  assert.ok((a.lora_B.weight.dataSync() as Float32Array).every((v) => v === 0));
  assert.is(lora.parameters(net).length, 8);
  // a regular expression matches whole paths, as PEFT's string target_modules
  const net2 = lora.apply(new Net(), { targets: 'layers\\.1\\..*(q|k)_proj' });
  assert.equal(
    [...lora.adapters(net2)].map(([p]) => p),
    ['layers.1.attn.q_proj', 'layers.1.attn.k_proj'],
  );
});

test('training: frozen base weights bit-identical after optimizer steps, adapters change, optimizer state for adapters only', () => {
  fl.manualSeed(2);
  const net = new Net();
  lora.apply(net, { r: 2, alpha: 4, dropout: 0.1, targets: ['q_proj', 'v_proj', 'mlp'] });
  const frozen = [...net.namedParameters()].filter(([, p]) => !p.requiresGrad);
  const before = new Map(frozen.map(([n, p]) => [n, p.dataSync().slice()]));
  const adapterBefore = lora.parameters(net).map((p) => p.dataSync().slice());
  const opt = new fl.optim.AdamW(net.parameters(), { lr: 1e-2 });
  const ids = fl.tensor([[1, 2, 3, 4, 5, 6]], { dtype: 'i64' });
  const target = fl.tensor([[2, 3, 4, 5, 6, 7]], { dtype: 'i64' });
  for (let i = 0; i < 3; i++) {
    opt.zeroGrad();
    const loss = nn.functional.crossEntropy(net.forward(ids).reshape([6, 20]), target.reshape([6]));
    loss.backward();
    opt.step();
  }
  for (const [n, p] of frozen) {
    assert.is(p.grad, null, `${n} has no gradient`);
    assert.equal(p.dataSync(), before.get(n), `${n} unchanged`);
  }
  lora.parameters(net).forEach((p, i) => {
    assert.not.equal(p.dataSync(), adapterBefore[i], 'adapter trained');
  });
  assert.is(Object.keys(opt.stateDict().state).length, lora.parameters(net).length);
});

test('merge equals the adapters within f32 rounding; unmerge restores; unload gives back the base structure', () => {
  fl.manualSeed(3);
  const net = new Net();
  lora.apply(net, { r: 4, alpha: 16, targets: ['q_proj', 'k_proj', 'v_proj'] });
  fl.noGrad(() => {
    for (const p of lora.parameters(net)) p.copy_(fl.randn([...p.shape]).mul(0.3));
  });
  const ids = fl.tensor([[3, 1, 4, 1, 5]], { dtype: 'i64' });
  const adapted = fl.noGrad(() => net.forward(ids));
  const base0 = net.stateDict()['layers.0.attn.q_proj.base_layer.weight'].dataSync().slice();
  lora.merge(net);
  assert.ok(
    fl.allclose(
      fl.noGrad(() => net.forward(ids)),
      adapted,
      { rtol: 1e-4, atol: 1e-5 },
    ),
  );
  lora.merge(net); // idempotent
  lora.unmerge(net);
  const base1 = net.stateDict()['layers.0.attn.q_proj.base_layer.weight'].dataSync();
  assert.ok(base1.every((v, i) => Math.abs(Number(v) - Number(base0[i])) <= 1e-6));
  lora.unload(net);
  assert.is([...lora.adapters(net)].length, 0);
  assert.is(lora.config(net), null);
  assert.ok(net.layers.at(0) instanceof Block);
  assert.ok((net.layers.at(0) as Block).attn.q_proj instanceof nn.Linear);
  assert.ok('layers.0.attn.q_proj.weight' in net.stateDict());
  assert.ok(
    fl.allclose(
      fl.noGrad(() => net.forward(ids)),
      adapted,
      { rtol: 1e-4, atol: 1e-5 },
    ),
    'unload merges',
  );
});

test("save/load: PEFT's adapter_model.safetensors names and adapter_config.json; a fresh model loads the same outputs", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flock-lora-'));
  try {
    fl.manualSeed(4);
    const net = new Net();
    const baseState = net.stateDict();
    lora.apply(net, { r: 2, alpha: 3, dropout: 0.05, targets: ['q_proj', 'v_proj'] });
    fl.noGrad(() => {
      for (const p of lora.parameters(net)) p.copy_(fl.randn([...p.shape]));
    });
    await lora.save(net, dir);
    const cfg = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    assert.equal(
      [cfg.peft_type, cfg.r, cfg.lora_alpha, cfg.lora_dropout, cfg.target_modules, cfg.bias, cfg.fan_in_fan_out, cfg.task_type],
      ['LORA', 2, 3, 0.05, ['q_proj', 'v_proj'], 'none', false, 'CAUSAL_LM'],
    );
    const header = fl.io.inspectSync(join(dir, 'adapter_model.safetensors'));
    const names = header.tensors.map((e) => e.name).sort();
    assert.is(names.length, 8);
    assert.ok(names.includes('base_model.model.layers.0.attn.q_proj.lora_A.weight'));
    assert.ok(names.includes('base_model.model.layers.1.attn.v_proj.lora_B.weight'));
    assert.equal(header.tensors.find((e) => e.name === 'base_model.model.layers.0.attn.q_proj.lora_A.weight')?.shape, [2, 8]);
    assert.is(header.metadata.format, 'pt');

    const fresh = new Net();
    fresh.loadStateDict(baseState);
    await lora.load(fresh, dir);
    net.eval();
    fresh.eval();
    const ids = fl.tensor([[7, 8, 9]], { dtype: 'i64' });
    assert.equal(fl.noGrad(() => fresh.forward(ids)).dataSync(), fl.noGrad(() => net.forward(ids)).dataSync());
    assert.equal(lora.config(fresh)?.targets, ['q_proj', 'v_proj']);
    // loading again into an adapted model overwrites the adapters
    await lora.load(fresh, dir);
    // a model without such layers refuses the file
    let code = '';
    await lora.load(new MLP(), dir).catch((e) => {
      code = e.code;
    });
    assert.is(code, 'ERR_ARG', 'no q_proj/v_proj in an MLP');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fan_in_fan_out (GPT-2 Conv1D weights) saves the flag and loads back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flock-lora-'));
  try {
    fl.manualSeed(5);
    const m = lora.apply(new MLP(true), { r: 2, alpha: 2, targets: ['fc1', 'fc2'], fanInFanOut: true });
    const [, a] = [...lora.adapters(m)][0];
    assert.equal([...a.lora_A.weight.shape], [2, 4]);
    assert.equal([...a.lora_B.weight.shape], [6, 2]);
    fl.noGrad(() => {
      for (const p of lora.parameters(m)) p.copy_(fl.randn([...p.shape]));
    });
    await lora.save(m, dir);
    assert.is(JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8')).fan_in_fan_out, true);
    const base = new MLP(true);
    base.loadStateDict(
      Object.fromEntries(
        Object.entries(m.stateDict()).flatMap(([k, v]) => (k.includes('lora_') ? [] : [[k.replace('.base_layer', ''), v]])),
      ),
    );
    await lora.load(base, dir);
    const x = fl.randn([3, 4]);
    assert.equal(fl.noGrad(() => base.forward(x)).dataSync(), fl.noGrad(() => m.forward(x)).dataSync());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the layer's type decides the weight layout, as PEFT: a fan_in_fan_out adapter loads into Linear layers; Conv1D needs no flag", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flock-lora-'));
  try {
    fl.manualSeed(8);
    const m = lora.apply(new MLP(), { r: 2, alpha: 2, targets: ['fc1', 'fc2'] });
    fl.noGrad(() => {
      for (const p of lora.parameters(m)) p.copy_(fl.randn([...p.shape]));
    });
    await lora.save(m, dir);
    // as PEFT writes for GPT-2, whose layers are Conv1D there
    const cfgPath = join(dir, 'adapter_config.json');
    writeFileSync(cfgPath, JSON.stringify({ ...JSON.parse(readFileSync(cfgPath, 'utf8')), fan_in_fan_out: true }));
    const fresh = new MLP();
    fresh.loadStateDict(
      Object.fromEntries(
        Object.entries(m.stateDict()).flatMap(([k, v]) => (k.includes('lora_') ? [] : [[k.replace('.base_layer', ''), v]])),
      ),
    );
    await lora.load(fresh, dir);
    const x = fl.randn([3, 4]);
    const want = fl.noGrad(() => m.forward(x));
    assert.equal(fl.noGrad(() => fresh.forward(x)).dataSync(), want.dataSync());
    lora.merge(fresh);
    assert.ok(
      fl.allclose(
        fl.noGrad(() => fresh.forward(x)),
        want,
        { rtol: 1e-5, atol: 1e-6 },
      ),
      'merge keeps Linear layout',
    );
    const conv = lora.apply(new MLP(true), { r: 2, targets: ['fc1'] });
    const [, a] = [...lora.adapters(conv)][0];
    assert.is(a.fanInFanOut, true);
    assert.equal([...a.lora_B.weight.shape], [6, 2]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('autocast bf16: adapters get f32 gradients close to the f32 run', () => {
  fl.manualSeed(6);
  const net = lora.apply(new Net(), { r: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'mlp'] });
  fl.noGrad(() => {
    for (const p of lora.parameters(net)) p.copy_(fl.randn([...p.shape]).mul(0.2));
  });
  const ids = fl.tensor([[1, 5, 9, 2]], { dtype: 'i64' });
  const run = () => {
    net.zeroGrad();
    net.forward(ids).float().square().mean().backward();
    return lora.parameters(net).map((p) => (p.grad as fl.Tensor).clone());
  };
  const ref = run();
  const low = fl.autocast({ device: 'cpu', dtype: 'bf16' }, () => {
    assert.is(fl.noGrad(() => net.forward(ids)).dtype, 'bf16', 'the adapted layers run in bf16');
    return run();
  });
  low.forEach((g, i) => {
    assert.is(g.dtype, 'f32');
    const err = g.sub(ref[i]).abs().max().dataSync()[0] as number;
    const scale = ref[i].abs().max().dataSync()[0] as number;
    assert.ok(err <= 0.05 * scale + 1e-6, `grad ${i}: ${err} vs ${scale}`);
  });
});

test('gradient checkpointing: the same adapter gradients as without', () => {
  fl.manualSeed(7);
  const net = lora.apply(new Net(), { r: 2, alpha: 2, targets: ['q_proj', 'v_proj'] });
  fl.noGrad(() => {
    for (const p of lora.parameters(net)) p.copy_(fl.randn([...p.shape]).mul(0.2));
  });
  const ids = fl.tensor([[4, 3, 2, 1]], { dtype: 'i64' });
  const run = (ckpt: boolean) => {
    net.zeroGrad();
    let h = net.emb.forward(ids);
    for (const b of net.layers) h = ckpt ? fl.utils.checkpoint(b as Block, h) : (b as Block).forward(h);
    net.head.forward(h).square().mean().backward();
    return lora.parameters(net).map((p) => (p.grad as fl.Tensor).dataSync());
  };
  const plain = run(false);
  const ckpt = run(true);
  ckpt.forEach((g, i) => {
    assert.equal(g, plain[i]);
  });
});

test('a sub-model adapted alone: its adapters save from the outer model; eval mode reaches the adapter dropout', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flock-lora-'));
  try {
    const net = new Net();
    net.eval();
    lora.apply(net.layers.at(1), { r: 2, dropout: 0.5, targets: ['q_proj'] });
    const [[path, a]] = [...lora.adapters(net)];
    assert.is(path, 'layers.1.attn.q_proj');
    assert.is(a.lora_dropout.training, false);
    assert.is(lora.config(net)?.r, 2);
    await lora.save(net, dir);
    const header = fl.io.inspectSync(join(dir, 'adapter_model.safetensors'));
    assert.equal(header.tensors.map((e) => e.name).sort(), [
      'base_model.model.layers.1.attn.q_proj.lora_A.weight',
      'base_model.model.layers.1.attn.q_proj.lora_B.weight',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('errors: unknown options, bad targets, no match, double apply, save without adapters', async () => {
  throwsCode(() => lora.apply(new Net(), { targets: ['q_proj'], rank: 2 } as never), 'ERR_ARG');
  throwsCode(() => lora.apply(new Net(), { targets: [] }), 'ERR_ARG');
  throwsCode(() => lora.apply(new Net(), { targets: ['nothing_here'] }), 'ERR_ARG');
  throwsCode(() => lora.apply(new Net(), { targets: ['q_proj'], r: 0 }), 'ERR_RANGE');
  const partial = new Net();
  throwsCode(() => lora.apply(partial, { targets: ['q_proj', 'norm'] }), 'ERR_ARG');
  assert.ok(
    partial.parameters().every((p) => p.requiresGrad),
    'a refused apply changes nothing',
  );
  assert.is([...lora.adapters(partial)].length, 0);
  const net = lora.apply(new Net(), { targets: ['q_proj'] });
  throwsCode(() => lora.apply(net, { targets: ['v_proj'] }), 'ERR_ARG');
  let code = '';
  await lora.save(new Net(), '/tmp/never-written').catch((e) => {
    code = e.code;
  });
  assert.is(code, 'ERR_ARG');
  throwsCode(() => lora.fromPeftConfig({ peft_type: 'LORA', target_modules: ['q'], use_dora: true }), 'ERR_FORMAT');
  throwsCode(() => lora.fromPeftConfig({ peft_type: 'IA3', target_modules: ['q'] }), 'ERR_FORMAT');
});

test.run();
