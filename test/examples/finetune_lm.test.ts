/**
 * examples/finetune_lm.ts, briefly: LoRA lowers the validation loss and a sample is streamed, in
 * one process and under `flockml launch` with 2 ranks (DDP over slices of each global batch must
 * reach the single process's loss); with --model it fine-tunes a checkpoint fromPretrained loads,
 * and --save writes the adapters in PEFT's layout.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { freePort } from '../dist/harness';

const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const example = join(root, 'examples', 'finetune_lm.ts');
const dir = mkdtempSync(join(tmpdir(), 'flockml-finetune-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

interface Result {
  val_loss_before: number;
  val_loss: number;
  sample_tokens: number;
  trainable: number;
  parameters: number;
  ranks?: number;
  out: string;
}

/** Runs a command; the example's result line parsed, with the whole output. */
function result(args: string[]): Result {
  const r = spawnSync(tsx, args, { cwd: root, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' }, timeout: 120_000 });
  const out = `${r.stdout}${r.stderr}`;
  assert.is(r.status, 0, out.slice(-3000));
  const lines = r.stdout.split('\n').filter((l) => l.includes('"example":"finetune-lm"'));
  assert.is(lines.length, 1, `exactly one result line:\n${out.slice(-3000)}`);
  return { ...JSON.parse(lines[0].replace(/^\[\d+\] /, '')), out: r.stdout };
}

/** The streamed text between the sample markers (launcher prefixes removed). */
function sample(out: string): string {
  const m = out.replace(/^\[\d+\] /gm, '').match(/--- sample ---\n([\s\S]*?)\n---\n/);
  assert.ok(m, `no sample in:\n${out.slice(-2000)}`);
  return (m as RegExpMatchArray)[1];
}

const brief = ['--pretrain-steps', '20', '--steps', '10', '--max-new-tokens', '20'];

test('one process and 2 ranks under flockml launch: the loss falls alike and a sample streams', () => {
  const adapter = join(dir, 'adapter');
  const one = result([example, ...brief, '--save', adapter]);
  assert.ok(one.val_loss < one.val_loss_before, `validation loss ${one.val_loss_before} → ${one.val_loss}`);
  assert.ok(one.sample_tokens >= 1 && sample(one.out).startsWith('The '), `sample: ${one.sample_tokens} tokens`);
  assert.ok(one.trainable > 0 && one.trainable < one.parameters / 10, `${one.trainable} of ${one.parameters} parameters train`);
  assert.ok(existsSync(join(adapter, 'adapter_model.safetensors')));
  assert.is(JSON.parse(readFileSync(join(adapter, 'adapter_config.json'), 'utf8')).peft_type, 'LORA');
  const two = result([
    join(root, 'lib', 'cli', 'main.ts'),
    'launch',
    '--nproc-per-node',
    '2',
    '--master-port',
    String(freePort()),
    example,
    ...brief,
  ]);
  assert.is(two.ranks, 2);
  assert.ok(two.val_loss < two.val_loss_before, `2 ranks: validation loss ${two.val_loss_before} → ${two.val_loss}`);
  // Each rank trains on half of every global batch; DDP's average is the global batch's mean loss.
  assert.ok(Math.abs(two.val_loss - one.val_loss) <= 2e-4, `2 ranks ${two.val_loss}, 1 process ${one.val_loss}`);
  assert.is(sample(two.out), sample(one.out), 'the same adapters sample the same text');
});

test('--model DIR fine-tunes a checkpoint that GPT2.fromPretrained loads', async () => {
  fl.manualSeed(4);
  const base = join(dir, 'base');
  await new fl.models.GPT2({ vocab_size: 377, n_positions: 64, n_embd: 32, n_layer: 2, n_head: 2 }).savePretrained(base);
  const got = result([example, '--model', base, '--steps', '10', '--context', '32', '--max-new-tokens', '5']);
  assert.is(got.parameters, 377 * 32 + 64 * 32 + 2 * (12 * 32 * 32 + 13 * 32) + 2 * 32 + got.trainable);
  assert.ok(got.val_loss < got.val_loss_before, `validation loss ${got.val_loss_before} → ${got.val_loss}`);
});

test.run();
