/**
 * fromPretrained streams: a GPT-2 checkpoint of ~310 MB (24 layers), loaded in a child process, raises its peak
 * resident memory (VmHWM) by the model's size plus a fixed margin at most, and every value arrives.
 * A control in the same conditions, which holds the whole file's tensors and the model at once, must
 * exceed that bound, so the bound can tell a streaming loader from one that is not.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const CONFIG = { model_type: 'gpt2', vocab_size: 4096, n_positions: 128, n_embd: 512, n_layer: 24, n_head: 8 };
/**
 * Above the model itself: the tensor being read and its transposed copy (a block of each shape stays
 * in the allocator's cache until the load ends), the C and JS heaps' slack. ~70 MiB measured.
 */
const MARGIN = 128 * 2 ** 20;

/** transformers' GPT-2 tensors in file order, Conv1D weights as [in, out]. */
function tensors(): [string, number[]][] {
  const { vocab_size: v, n_positions: n, n_embd: e, n_layer: layers } = CONFIG;
  const out: [string, number[]][] = [
    ['transformer.wte.weight', [v, e]],
    ['transformer.wpe.weight', [n, e]],
  ];
  for (let i = 0; i < layers; i++) {
    const h = `transformer.h.${i}`;
    out.push([`${h}.ln_1.weight`, [e]], [`${h}.ln_1.bias`, [e]]);
    out.push([`${h}.attn.c_attn.weight`, [e, 3 * e]], [`${h}.attn.c_attn.bias`, [3 * e]]);
    out.push([`${h}.attn.c_proj.weight`, [e, e]], [`${h}.attn.c_proj.bias`, [e]]);
    out.push([`${h}.ln_2.weight`, [e]], [`${h}.ln_2.bias`, [e]]);
    out.push([`${h}.mlp.c_fc.weight`, [e, 4 * e]], [`${h}.mlp.c_fc.bias`, [4 * e]]);
    out.push([`${h}.mlp.c_proj.weight`, [4 * e, e]], [`${h}.mlp.c_proj.bias`, [e]]);
  }
  out.push(['transformer.ln_f.weight', [e]], ['transformer.ln_f.bias', [e]]);
  return out;
}

/** Element j of tensor k (f32): a pattern of period 1000 in j, so one buffer of a few periods writes any tensor. */
const PERIOD = 1000;
const value = (k: number, j: number) => Math.fround(((j * 7 + k * 13) % PERIOD) / PERIOD - 0.5);
const CHUNK = 1024 * PERIOD;

/** Writes config.json and model.safetensors to `dir` chunk by chunk (the writer never holds a tensor). */
function writeCheckpoint(dir: string): void {
  const list = tensors();
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let at = 0;
  for (const [name, shape] of list) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [at, at + bytes] };
    at += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const fd = openSync(join(dir, 'model.safetensors'), 'w');
  try {
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    writeSync(fd, len);
    writeSync(fd, json);
    list.forEach(([, shape], k) => {
      const numel = shape.reduce((a, b) => a * b, 1);
      // One period, then doubled in place up to the chunk's length (a multiple of the period).
      const chunk = new Float32Array(Math.min(CHUNK, Math.ceil(numel / PERIOD) * PERIOD));
      for (let j = 0; j < PERIOD; j++) chunk[j] = value(k, j);
      for (let n = PERIOD; n < chunk.length; n *= 2) chunk.copyWithin(n, 0, Math.min(n, chunk.length - n));
      for (let left = numel; left > 0; left -= chunk.length)
        writeSync(fd, new Uint8Array(chunk.buffer, 0, Math.min(left, chunk.length) * 4));
    });
  } finally {
    closeSync(fd);
  }
  writeFileSync(join(dir, 'config.json'), JSON.stringify(CONFIG));
}

interface Measured {
  before: number;
  peak: number;
  bytes: number;
  c_fc: number[];
  wte: number[];
}

function load(dir: string, mode: 'stream' | 'whole'): Measured {
  const tsx = pathToFileURL(require.resolve('tsx')).href;
  const r = spawnSync(process.execPath, ['--import', tsx, join(__dirname, 'load_memory_child.ts'), dir, mode], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.is(r.status, 0, `${mode} load failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
let dir = '';

test.before(() => {
  dir = mkdtempSync(join(tmpdir(), 'flockml-load-memory-'));
  writeCheckpoint(dir);
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('GPT2.fromPretrained of a 310 MB checkpoint peaks at the model plus 128 MiB; the values are the file’s', () => {
  const got = load(dir, 'stream');
  const grew = got.peak - got.before;
  assert.ok(got.bytes > 300e6, `the model holds ${mib(got.bytes)}`);
  assert.ok(grew < got.bytes + MARGIN, `peak rose by ${mib(grew)} for a ${mib(got.bytes)} model (bound: model + ${mib(MARGIN)})`);
  const e = CONFIG.n_embd;
  const k = tensors().findIndex(([n]) => n === 'transformer.h.1.mlp.c_fc.weight');
  // c_fc is stored [e, 4e]; the Linear's [o, i] is the file's [i, o], element i·4e + o.
  assert.equal(got.c_fc, [value(k, 3 * 4 * e + 4 * e - 1), value(k, (e - 2) * 4 * e + 5)]);
  assert.equal(got.wte, [value(0, 7 * e + 11), value(0, (CONFIG.vocab_size - 1) * e + e - 1)]);
});

test('the control (every tensor of the file in memory beside the model) breaks that bound', () => {
  const got = load(dir, 'whole');
  const grew = got.peak - got.before;
  assert.ok(grew > got.bytes + MARGIN, `the control rose by only ${mib(grew)} for a ${mib(got.bytes)} model: the bound would not catch it`);
});

test.run();
