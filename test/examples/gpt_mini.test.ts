/**
 * examples/gpt_mini.ts: sampling (top-k through fl.topk and fl.multinomial) on a small random
 * model, and the example itself unchanged under autocast and under `flockml launch` with two
 * ranks, whose DDP run over slices of each global batch must reach the single process's loss.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { GptMini, generate } from '../../examples/gpt_mini';
import { freePort } from '../dist/harness';
import { values } from '../helpers/values';

const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

function tiny(): GptMini {
  fl.manualSeed(3);
  const m = new GptMini({ vocab: 13, context: 8, dModel: 16, heads: 2, layers: 2, dropout: 0 });
  // Larger weights than GPT-2's init so the logits are far from uniform.
  for (const p of m.parameters()) if (p.ndim >= 2) fl.noGrad(() => p.mul_(25));
  return m;
}

const ids = (rows: number[][]) => fl.tensor(BigInt64Array.from(rows.flat(), BigInt), { shape: [rows.length, rows[0].length] });

test('topK 1 is greedy decoding: each token the argmax of the last position, past the context window', () => {
  const m = tiny();
  const prompt = ids([
    [1, 2, 3],
    [4, 4, 0],
  ]);
  const got = generate(m, prompt, { maxNewTokens: 10, topK: 1, temperature: 0.7 });
  assert.equal(got.shape, [2, 13]);
  let want = prompt.clone();
  for (let s = 0; s < 10; s++) {
    const t = want.shape[1];
    const ctx = t > 8 ? want.narrow(1, t - 8, 8) : want;
    const next = fl.noGrad(() =>
      m
        .forward(ctx)
        .narrow(1, ctx.shape[1] - 1, 1)
        .squeeze(1)
        .argmax(1, true),
    );
    want = fl.cat([want, next], 1);
  }
  assert.equal(values(got), values(want));
  assert.ok(m.training, 'the model is back in training mode');
});

test('topK restricts the draws to the k most likely tokens; a seed repeats them and leaves the global generator alone', () => {
  const m = tiny();
  const prompt = ids(Array.from({ length: 400 }, () => [5, 1, 7]));
  const logits = fl.noGrad(() =>
    m
      .forward(ids([[5, 1, 7]]))
      .narrow(1, 2, 1)
      .reshape([13]),
  );
  const top3 = new Set(values(fl.topk(logits, 3).indices));
  fl.manualSeed(99);
  const state = fl.getRngState();
  const drawn = values(generate(m, prompt, { maxNewTokens: 1, topK: 3, seed: 7 }).narrow(1, 3, 1));
  assert.equal(fl.getRngState(), state, 'the global generator is where it was');
  assert.ok(
    drawn.every((t) => top3.has(t)),
    `drew ${[...new Set(drawn)]} outside the top 3 ${[...top3]}`,
  );
  assert.ok(new Set(drawn).size >= 2, 'more than one of the top 3 is drawn');
  const again = values(generate(m, prompt, { maxNewTokens: 1, topK: 3, seed: 7 }).narrow(1, 3, 1));
  assert.equal(again, drawn, 'the same seed draws the same tokens');
  const free = values(generate(m, prompt, { maxNewTokens: 1, temperature: 3, seed: 7 }).narrow(1, 3, 1));
  assert.ok(
    free.some((t) => !top3.has(t)),
    'without topK other tokens are drawn too',
  );
});

test('bad sampling options are refused', () => {
  const m = tiny();
  const p = ids([[1, 2]]);
  assert.throws(() => generate(m, p, { temperature: 0 }), /temperature/);
  assert.throws(() => generate(m, p, { topK: 0 }), /topK/);
  assert.throws(() => generate(m, p, { maxNewTokens: 1.5 }), /maxNewTokens/);
  assert.throws(() => generate(m, fl.tensor([1, 2]), {}), /ids/);
});

/** Runs a command and returns the parsed JSON of the last line that holds the example's result. */
function result(args: string[]): Record<string, unknown> {
  const r = spawnSync(tsx, args, { cwd: root, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' }, timeout: 120_000 });
  const out = `${r.stdout}${r.stderr}`;
  assert.is(r.status, 0, out.slice(-3000));
  const lines = r.stdout.split('\n').filter((l) => l.includes('"example":"gpt-mini"'));
  assert.is(lines.length, 1, `exactly one result line:\n${out.slice(-3000)}`);
  return JSON.parse(lines[0].replace(/^\[\d+\] /, ''));
}

const small = ['--steps', '2', '--batch', '4', '--eval-batches', '1', '--no-sample'];

test('the example runs under autocast bf16, and under a 2-rank launch with the single process loss', () => {
  const low = result([join(root, 'examples', 'gpt_mini.ts'), ...small, '--autocast', 'bf16']);
  assert.is(low.autocast, 'bf16');
  assert.ok(Number.isFinite(low.val_loss) && (low.val_loss as number) > 0, `val_loss ${low.val_loss}`);
  const one = result([join(root, 'examples', 'gpt_mini.ts'), ...small]);
  const two = result([
    join(root, 'lib', 'cli', 'main.ts'),
    'launch',
    '--nproc-per-node',
    '2',
    '--master-port',
    String(freePort()),
    join(root, 'examples', 'gpt_mini.ts'),
    ...small,
  ]);
  assert.is(two.ranks, 2);
  // Each rank trains on half of every global batch; DDP's average is the global batch's mean loss.
  assert.ok(Math.abs((two.val_loss as number) - (one.val_loss as number)) <= 2e-4, `2 ranks ${two.val_loss}, 1 process ${one.val_loss}`);
  assert.ok(Math.abs((low.val_loss as number) - (one.val_loss as number)) < 0.05, `bf16 ${low.val_loss}, f32 ${one.val_loss}`);
});

test.run();
