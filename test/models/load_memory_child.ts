/**
 * Child process of load_memory.test.ts: loads the GPT-2 checkpoint in argv[2] and prints one JSON
 * line with its peak resident memory (VmHWM) before and after, and sampled parameter values.
 * argv[3] 'stream' loads with GPT2.fromPretrained; 'whole' is the control that a streaming bound
 * must catch: every tensor of the file read at once (fl.io.load), then the model built beside them (without
 * random initialisation, as fromPretrained builds it).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { withoutInit } from '../../lib/nn/init';

/** A field of /proc/self/status in bytes (VmHWM: the peak resident set; VmRSS: the current one). */
function status(field: 'VmHWM' | 'VmRSS'): number {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
  if (!m) throw new Error(`no ${field} in /proc/self/status`);
  return Number(m[1]) * 1024;
}

async function main(): Promise<void> {
  const [dir, mode] = process.argv.slice(2);
  fl.zeros([4]).dataSync(); // the addon and its threads are up before the baseline
  const before = status('VmHWM');
  let model: fl.models.GPT2;
  let peak: number;
  if (mode === 'stream') {
    model = await fl.models.GPT2.fromPretrained(dir);
    await fl.sync();
    peak = status('VmHWM');
  } else {
    const all = await fl.io.load(join(dir, 'model.safetensors'));
    model = withoutInit(() => new fl.models.GPT2(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'))));
    await fl.sync();
    peak = status('VmHWM');
    for (const t of Object.values(all)) t.dispose();
  }
  const params = Object.fromEntries(model.namedParameters());
  const sample = (name: string, at: number[]) => {
    const p = params[name];
    const flat = at[0] * (p.shape[1] ?? 1) + (at[1] ?? 0);
    return (p.reshape([-1]).narrow(0, flat, 1).dataSync() as Float32Array)[0];
  };
  const e = model.config.n_embd;
  console.log(
    JSON.stringify({
      before,
      peak,
      bytes: model.parameters().reduce((n, p) => n + p.numel() * 4, 0),
      // A weight stored [in, out] (Conv1D) is [out, in] here: element [o, i] is the file's [i, o].
      c_fc: [sample('transformer.h.1.mlp.c_fc.weight', [4 * e - 1, 3]), sample('transformer.h.1.mlp.c_fc.weight', [5, e - 2])],
      wte: [sample('transformer.wte.weight', [7, 11]), sample('transformer.wte.weight', [model.vocabSize - 1, e - 1])],
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
