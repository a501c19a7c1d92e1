/** Shared by the fl.models tests: the fixtures of make_lm_fixtures.py and the Python side of the round trip. */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

export const PYTHON = '/usr/bin/python3';
export const SCRIPT = join(__dirname, '..', 'fixtures', 'make_lm_fixtures.py');
export const LM = join(__dirname, '..', 'fixtures', 'lm');

export interface Expected {
  kind: 'gpt2' | 'llama';
  prompts: number[][];
  logits: number[][][];
  padded_ids: number[][];
  padded_mask: number[][];
  padded_logits: number[][][];
  greedy_prompt: number[][];
  greedy: number[][];
}

export const expected = (name: string): Expected => JSON.parse(readFileSync(join(LM, name, 'expected.json'), 'utf8'));

export function load(name: string, options: fl.models.PretrainedOptions = {}): Promise<fl.models.CausalLM> {
  const M = expected(name).kind === 'gpt2' ? fl.models.GPT2 : fl.models.Llama;
  return M.fromPretrained(join(LM, name), options);
}

/** Largest |a - b| relative to 1 + |b| (f32 logits of a few units: 1e-5 is a few ulps). */
export function maxError(got: fl.Tensor, want: number[][][], mask?: number[][]): number {
  const g = got.to('f64').dataSync() as Float64Array;
  const w = want.flat(2);
  const v = want[0][0].length;
  let worst = 0;
  for (let i = 0; i < w.length; i++) {
    const pos = Math.floor(i / v);
    if (mask && !mask[Math.floor(pos / want[0].length)][pos % want[0].length]) continue;
    worst = Math.max(worst, Math.abs(g[i] - w[i]) / (1 + Math.abs(w[i])));
  }
  return worst;
}

const hasTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch, numpy'], { encoding: 'utf8' }).status === 0;

/** Whether the Python side can run; in CI it must. */
export function pythonSideRuns(): boolean {
  if (hasTorch) return true;
  assert.not.ok(process.env.CI, 'CI must have /usr/bin/python3 with torch and numpy');
  console.log('  (skipped outside CI: no /usr/bin/python3 with torch)');
  return false;
}

export function python(...args: string[]): Record<string, unknown> {
  const r = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', timeout: 120_000 });
  assert.is(r.status, 0, `${SCRIPT} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

/**
 * Ten AdamW steps of next-token prediction on one fixed sequence: every parameter (a tied one
 * included) gets a gradient each step and the loss at least halves.
 */
export function expectTrains(model: fl.models.GPT2 | fl.models.Llama, vocab: number): void {
  const opt = new fl.optim.AdamW(model.parameters(), { lr: 1e-2 });
  const ids = fl.tensor([[1, 2, 3, 4, 5, 6, 7, 8]], { dtype: 'i64' });
  const target = fl.tensor([2, 3, 4, 5, 6, 7, 8, 9], { dtype: 'i64' });
  const losses: number[] = [];
  for (let i = 0; i < 10; i++) {
    opt.zeroGrad();
    const loss = fl.nn.functional.crossEntropy(model.forward(ids).reshape([8, vocab]), target);
    loss.backward();
    losses.push(loss.itemSync());
    assert.ok(model.parameters().every((p) => p.grad));
    opt.step();
  }
  assert.ok(losses[9] < losses[0] / 2, `loss ${losses[0]} → ${losses[9]}`);
}
