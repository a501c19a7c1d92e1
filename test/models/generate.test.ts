/**
 * generate and stream: greedy decoding equals transformers' (recomputed context) and is the same
 * with and without the KV cache; left-padded batches equal each row alone; seeded sampling
 * repeats; stop tokens; stream yields generate's tokens and leaves the event loop running.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { caught } from '../helpers/errors';
import { expected, load } from './helpers';

// Two virtual CPU devices (as FLOCKML_CPU_DEVICES=2), so generation on cpu:1 is tested.
fl.setCpuDeviceCount(2);

const NAMES = ['gpt2', 'llama', 'llama_tied'];
const rows = (t: fl.Tensor) => t.tolistSync() as number[][];

/** Left-pads prompts of different lengths with `pad`; the mask marks the real tokens. */
function leftPad(prompts: number[][], pad = 0): { ids: number[][]; mask: number[][] } {
  const t = Math.max(...prompts.map((p) => p.length));
  return {
    ids: prompts.map((p) => [...new Array(t - p.length).fill(pad), ...p]),
    mask: prompts.map((p) => [...new Array(t - p.length).fill(0), ...p.map(() => 1)]),
  };
}

test("greedy decoding equals transformers' (no cache, full context), with the cache and without", async () => {
  for (const name of NAMES) {
    const e = expected(name);
    const m = await load(name);
    const n = e.greedy[0].length - e.greedy_prompt[0].length;
    assert.equal(rows(m.generate(e.greedy_prompt, { maxNewTokens: n, stopTokens: [] })), e.greedy, `${name} cached`);
    assert.equal(rows(m.generate(e.greedy_prompt, { maxNewTokens: n, stopTokens: [], useCache: false })), e.greedy, `${name} uncached`);
  }
});

test('cache and no cache agree token for token on long runs, a batch of left-padded rows equals each row alone', async () => {
  const prompts = [[5, 17, 42, 8, 33], [60, 1], [9, 9, 27], [12]];
  const { ids, mask } = leftPad(prompts);
  for (const name of NAMES) {
    const m = await load(name);
    const o = { maxNewTokens: 16, stopTokens: [] };
    const batch = rows(m.generate(ids, { ...o, attentionMask: mask }));
    assert.equal(rows(m.generate(ids, { ...o, attentionMask: mask, useCache: false })), batch, `${name}: cache vs none`);
    prompts.forEach((p, r) => {
      const alone = rows(m.generate([p], o))[0];
      assert.equal(batch[r].slice(ids[0].length), alone.slice(p.length), `${name} row ${r}`);
    });
  }
});

test('sampling: a seed repeats the tokens (cached or not), another seed differs; topK 1 and temperature 0 are greedy', async () => {
  const m = await load('llama');
  const prompt = [[3, 14, 15, 9]];
  const o = { maxNewTokens: 16, stopTokens: [], doSample: true, temperature: 1.5 };
  const a = rows(m.generate(prompt, { ...o, seed: 11 }));
  assert.equal(rows(m.generate(prompt, { ...o, seed: 11 })), a);
  assert.equal(rows(m.generate(prompt, { ...o, seed: 11, useCache: false })), a);
  assert.not.equal(rows(m.generate(prompt, { ...o, seed: 12 })), a);
  const greedy = rows(m.generate(prompt, { maxNewTokens: 16, stopTokens: [] }));
  assert.equal(rows(m.generate(prompt, { ...o, seed: 5, topK: 1 })), greedy);
  assert.equal(rows(m.generate(prompt, { ...o, seed: 5, temperature: 0 })), greedy);
  assert.equal(rows(m.generate(prompt, { ...o, seed: 5, topP: 1e-6 })), greedy);
  const state = fl.getRngState();
  m.generate(prompt, { ...o, seed: 3 });
  assert.equal(fl.getRngState(), state, 'the global generator is untouched');
});

test('topK restricts the draw to the k most likely tokens', async () => {
  const m = await load('gpt2');
  const prompt = [3, 14, 15, 9];
  const logits = m
    .forward(fl.tensor([prompt], { dtype: 'i64' }))
    .narrow(1, 3, 1)
    .reshape([64]);
  const top = new Set((fl.topk(logits, 3).indices.tolistSync() as number[]).map(Number));
  const drawn = rows(m.generate(new Array(64).fill(prompt), { maxNewTokens: 1, doSample: true, topK: 3, seed: 1, stopTokens: [] }));
  const seen = new Set(drawn.map((r) => r[4]));
  assert.ok(
    [...seen].every((t) => top.has(t)),
    `drawn ${[...seen]} outside the top 3 ${[...top]}`,
  );
  assert.ok(seen.size > 1, 'more than one of them is drawn');
});

test('repetitionPenalty steers greedy decoding away from tokens already in the row', async () => {
  const m = await load('llama');
  const out = rows(m.generate([[3, 14, 15, 9]], { maxNewTokens: 10, stopTokens: [], repetitionPenalty: 1e4 }))[0];
  assert.is(new Set(out).size, out.length, `repeated tokens in ${out}`);
});

test('stop tokens: a row ends at its stop token (kept), stopped rows are padded, others go on unchanged', async () => {
  const e = expected('gpt2');
  const m = await load('gpt2');
  const cont = e.greedy[0].slice(4);
  const stop = cont[2];
  assert.equal(rows(m.generate(e.greedy_prompt, { maxNewTokens: 10, stopTokens: [stop] })), [[...e.greedy_prompt[0], ...cont.slice(0, 3)]]);
  const other = [60, 1, 9, 9];
  const alone = rows(m.generate([other], { maxNewTokens: 10, stopTokens: [] }))[0];
  const both = rows(m.generate([e.greedy_prompt[0], other], { maxNewTokens: 10, stopTokens: [stop], padTokenId: 63 }));
  if (!alone.slice(4).includes(stop)) {
    assert.equal(both[1], alone);
    assert.equal(both[0], [...e.greedy_prompt[0], ...cont.slice(0, 3), ...new Array(7).fill(63)]);
  }
  // config.eos_token_id is the default stop token (0 in the fixture's config).
  const eos = m.generate([[1, 2]], { maxNewTokens: 30 });
  const gen = rows(eos)[0].slice(2);
  assert.ok(!gen.slice(0, -1).includes(0));
});

test('stream yields the tokens generate returns, one step at a time, and timers run between tokens', async () => {
  for (const name of ['gpt2', 'llama']) {
    const m = await load(name);
    const { ids, mask } = leftPad([
      [5, 17, 42, 8],
      [60, 1],
    ]);
    for (const o of [{}, { doSample: true, seed: 9, topP: 0.9 }]) {
      const opts = { maxNewTokens: 12, stopTokens: [], attentionMask: mask, ...o };
      const want = rows(m.generate(ids, opts)).map((r) => r.slice(4));
      const got: number[][] = [[], []];
      let ticks = 0;
      const ticksAt: number[] = [];
      const timer = setInterval(() => ticks++, 0);
      try {
        for await (const s of m.stream(ids, opts)) {
          s.tokens.forEach((t, r) => got[r].push(t));
          ticksAt.push(ticks);
          assert.is(s.step, ticksAt.length - 1);
          // Work between tokens long enough for a 1 ms timer to be due: the stream must let it run.
          const until = Date.now() + 2;
          while (Date.now() < until);
        }
      } finally {
        clearInterval(timer);
      }
      assert.equal(got, want, `${name} ${JSON.stringify(o)}`);
      for (let i = 1; i < ticksAt.length; i++) assert.ok(ticksAt[i] > ticksAt[i - 1], `no timer tick between tokens ${i - 1} and ${i}`);
    }
  }
});

test('a stream ended early frees its cache; generate leaves no tensors behind', async () => {
  const m = await load('llama');
  const live = () => fl.memory().cpu.tensors;
  const before = live();
  for await (const s of m.stream([[1, 2, 3]], { maxNewTokens: 50, stopTokens: [] })) if (s.step === 2) break;
  m.generate([[1, 2, 3]], { maxNewTokens: 5 }).dispose();
  assert.is(live(), before);
});

test('generation on cpu:1', async () => {
  const e = expected('llama');
  const m = await load('llama', { device: 'cpu:1' });
  const n = e.greedy[0].length - e.greedy_prompt[0].length;
  const out = m.generate(fl.tensor(e.greedy_prompt, { dtype: 'i64', device: 'cpu:1' }), { maxNewTokens: n, stopTokens: [] });
  assert.equal(rows(out), e.greedy);
});

test('options and inputs are checked', async () => {
  const m = await load('gpt2');
  const p = [[1, 2, 3]];
  assert.is(caught(() => m.generate(p, { maxNewToken: 3 } as never)).code, 'ERR_ARG');
  assert.is(caught(() => m.generate(p, { topP: 0 })).code, 'ERR_RANGE');
  assert.is(caught(() => m.generate(p, { temperature: -1 })).code, 'ERR_RANGE');
  assert.is(caught(() => m.generate(p, { topK: 0 })).code, 'ERR_RANGE');
  assert.is(caught(() => m.generate([[1, 64]])).code, 'ERR_INDEX');
  assert.is(caught(() => m.generate([[1, 2], [3]])).code, 'ERR_SHAPE');
  assert.match(caught(() => m.generate(p, { attentionMask: [[1, 1, 0]] })).message, 'left');
  assert.is(caught(() => m.generate(p, { maxNewTokens: 31 })).code, 'ERR_RANGE', 'n_positions is 32');
  assert.is(caught(() => m.stream(p, { seed: -1 })).code, 'ERR_RANGE', 'stream checks its options at once');
  assert.equal(rows(m.generate(p, { maxNewTokens: 0 })), p);
});

test.run();
