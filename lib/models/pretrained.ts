/**
 * Hugging Face checkpoint directories in and out: config.json with model.safetensors, or shards
 * listed in model.safetensors.index.json. Loading builds the model on the target device without
 * random initialisation and then reads one tensor at a time straight there (the native reader
 * places the bytes), copies it into its parameter and waits for the copy before the next read, so
 * peak memory is the model plus the tensor in hand (and its transposed copy, for GPT-2's Conv1D
 * weights); the allocator keeps a block of each shape until the load ends. Saving writes
 * transformers' names and orientation (GPT-2's Conv1D weights transposed back to [in, out], a tied
 * head stored once) with `format: pt` metadata, as save_pretrained does, in one file or in shards.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Tensor } from '../tensor';
import type { DType } from '../dtype';
import { canonicalDType, isDType, itemSize } from '../dtype';
import { normalizeDevice, sync } from '../device';
import { noGrad } from '../dispatch/grad_mode';
import { withoutInit } from '../nn/init';
import { emptyCache } from '../memory';
import { argError, checkOptions, describe, dtypeError, flockError } from '../errors';
import { checkInt } from '../validate';
import { inspect, loadNamed, save } from '../io/safetensors';
import { pathInside } from '../io/confine';
import { shapeStr } from '../ops/util';
import type { CausalLM } from './causal_lm';

export interface PretrainedOptions {
  /** Where the parameters live: 'cpu' (default), 'cpu:N' or 'cuda:N'. */
  device?: string;
  /** Floating dtype of the parameters (default f32, as transformers loads without torch_dtype). */
  dtype?: DType;
}

/** Tensors transformers keeps in some checkpoints that are not parameters (causal-mask buffers, rotary tables). */
const IGNORED = /(\.attn\.bias|\.attn\.masked_bias|\.rotary_emb\.inv_freq)$/;

const TORCH_DTYPE: Partial<Record<DType, string>> = { f32: 'float32', f64: 'float64', bf16: 'bfloat16', f16: 'float16' };

async function readJson(op: string, path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw flockError('ERR_NOT_FOUND', op, `cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw flockError('ERR_FORMAT', op, `${path} is not a JSON object: ${(e as Error).message}`);
  }
}

/** Each tensor name in the checkpoint and the file holding it. */
async function tensorFiles(op: string, dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const indexPath = join(dir, 'model.safetensors.index.json');
  if (existsSync(indexPath)) {
    const map = (await readJson(op, indexPath)).weight_map;
    if (map === null || typeof map !== 'object' || Array.isArray(map))
      throw flockError('ERR_FORMAT', op, `${indexPath} has no weight_map object`);
    const files = new Map<string, string>();
    for (const [name, file] of Object.entries(map as Record<string, unknown>)) {
      if (!files.has(String(file))) files.set(String(file), await pathInside(op, dir, file, `${indexPath} weight_map['${name}']`));
      out.set(name, files.get(String(file)) as string);
    }
    return out;
  }
  const single = join(dir, 'model.safetensors');
  if (!existsSync(single)) throw flockError('ERR_NOT_FOUND', op, `${dir} has neither model.safetensors nor model.safetensors.index.json`);
  for (const t of (await inspect(single)).tensors) out.set(t.name, single);
  return out;
}

/** Reads config.json, builds the model with `build`, and loads every parameter from the checkpoint. */
export async function loadPretrained<M extends CausalLM>(
  dir: string,
  options: PretrainedOptions,
  op: string,
  build: (config: Record<string, unknown>, o: { device: string; dtype: DType }) => M,
): Promise<M> {
  const o = checkOptions(op, options, ['device', 'dtype']);
  if (typeof dir !== 'string' || dir === '') throw argError(op, `dir must be a non-empty string, got ${describe(dir)}`);
  if (o.dtype !== undefined && !isDType(o.dtype)) throw dtypeError(op, `unknown dtype ${describe(o.dtype)}`);
  const device = normalizeDevice(o.device, op);
  const dtype: DType = canonicalDType(o.dtype ?? 'f32') ?? 'f32';
  const config = await readJson(op, join(dir, 'config.json'));
  const files = await tensorFiles(op, dir);
  // Every parameter is about to be overwritten: random initialisation would only cost time and memory.
  const model = withoutInit(() => build(config, { device, dtype }));
  try {
    await loadTensors(op, dir, model, files, device);
  } catch (e) {
    for (const p of model.parameters()) p.dispose();
    throw e;
  } finally {
    // The read tensors and their transposes are in the allocator's cache now, a block of each
    // shape: a model's worth of training temporaries is better served by that memory.
    emptyCache(device);
  }
  return model;
}

/** Copies each checkpoint tensor into its parameter, one at a time; every parameter must be found. */
async function loadTensors(op: string, dir: string, model: CausalLM, files: Map<string, string>, device: string): Promise<void> {
  const params = new Map(model.namedParameters());
  const byHf = new Map(model.hfNames().map((e) => [e.hf, e]));
  const loaded = new Set<string>();
  const unexpected: string[] = [];
  for (const [stored, file] of files) {
    // Original GPT-2 checkpoints name the body's tensors without the `transformer.` prefix.
    const entry = byHf.get(stored) ?? byHf.get(`transformer.${stored}`);
    if (!entry) {
      // A tied head is stored once, under the embedding's name; a copy under lm_head is ignored, as transformers does.
      if (!IGNORED.test(stored) && !(stored === 'lm_head.weight' && !byHf.has(stored))) unexpected.push(stored);
      continue;
    }
    const p = params.get(entry.name) as Tensor;
    const src = (await loadNamed(file, [stored], device))[stored];
    try {
      const want = entry.transposed ? [p.shape[1], p.shape[0]] : p.shape;
      if (src.ndim !== want.length || src.shape.some((s, i) => s !== want[i]))
        throw flockError('ERR_SHAPE', op, `${stored} in ${file} is ${shapeStr(src.shape)}, the model expects ${shapeStr(want)}`);
      noGrad(() => {
        const value = entry.transposed ? src.transpose(0, 1) : src;
        p.copy_(value);
        if (value !== src) value.dispose();
      });
    } finally {
      src.dispose();
    }
    // The copy holds `src` until it has run: without this wait the reads would outrun the device
    // (still zero-filling the fresh model, say) and the tensors waiting for it pile up in memory.
    await sync(device);
    loaded.add(entry.name);
  }
  if (unexpected.length)
    throw flockError('ERR_ARG', op, `the checkpoint in ${dir} has tensors the model does not: ${unexpected.slice(0, 8).join(', ')}`);
  const missing = [...params.keys()].filter((k) => !loaded.has(k));
  if (missing.length)
    throw flockError('ERR_ARG', op, `the checkpoint in ${dir} lacks ${missing.length} tensors: ${missing.slice(0, 8).join(', ')}`);
}

export interface SavePretrainedOptions {
  /**
   * Largest shard in bytes (transformers' max_shard_size): above it the weights are split into
   * model-0000i-of-0000n.safetensors files with model.safetensors.index.json (default: one file).
   */
  maxShardSize?: number;
}

/** Tensors in order, cut into groups of at most `limit` bytes (a larger tensor gets a group of its own). */
function shards(state: Record<string, Tensor>, limit: number): string[][] {
  const out: string[][] = [[]];
  let size = 0;
  for (const [name, t] of Object.entries(state)) {
    const bytes = t.numel() * itemSize(t.dtype);
    if (size > 0 && size + bytes > limit) {
      out.push([]);
      size = 0;
    }
    out[out.length - 1].push(name);
    size += bytes;
  }
  return out;
}

/** Writes config.json and model.safetensors (or shards and their index) in transformers' layout. */
export async function savePretrained(model: CausalLM, dir: string, options: SavePretrainedOptions = {}): Promise<void> {
  const op = `${model.constructor.name}.savePretrained`;
  const o = checkOptions(op, options, ['maxShardSize']);
  if (typeof dir !== 'string' || dir === '') throw argError(op, `dir must be a non-empty string, got ${describe(dir)}`);
  const limit = o.maxShardSize === undefined ? Number.POSITIVE_INFINITY : checkInt(op, 'maxShardSize', o.maxShardSize, 1);
  const params = new Map(model.namedParameters());
  const state: Record<string, Tensor> = {};
  const made: Tensor[] = [];
  for (const e of model.hfNames()) {
    const p = params.get(e.name) as Tensor;
    if (e.transposed) {
      const t = noGrad(() => p.transpose(0, 1).contiguous());
      made.push(t);
      state[e.hf] = t;
    } else state[e.hf] = p;
  }
  const metadata = { format: 'pt' };
  try {
    await mkdir(dir, { recursive: true });
    const groups = shards(state, limit);
    // A layout left by an earlier save would be read instead of (or beside) this one.
    await rm(join(dir, groups.length === 1 ? 'model.safetensors.index.json' : 'model.safetensors'), { force: true });
    if (groups.length === 1) await save(state, join(dir, 'model.safetensors'), { metadata });
    else {
      const weightMap: Record<string, string> = {};
      let total = 0;
      for (const [i, names] of groups.entries()) {
        const file = `model-${String(i + 1).padStart(5, '0')}-of-${String(groups.length).padStart(5, '0')}.safetensors`;
        await save(Object.fromEntries(names.map((n) => [n, state[n]])), join(dir, file), { metadata });
        for (const n of names) {
          weightMap[n] = file;
          total += state[n].numel() * itemSize(state[n].dtype);
        }
      }
      const index = { metadata: { total_size: total }, weight_map: weightMap };
      await writeFile(join(dir, 'model.safetensors.index.json'), `${JSON.stringify(index, null, 2)}\n`);
    }
    const config = { ...model.config, torch_dtype: TORCH_DTYPE[model.dtype] ?? model.dtype };
    await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  } finally {
    for (const t of made) t.dispose();
  }
}
