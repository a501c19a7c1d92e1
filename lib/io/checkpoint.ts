/**
 * Training checkpoints: everything a run needs to continue exactly where it stopped.
 *
 *   <dir>/step-000001200/model.safetensors       the model's state dict (PyTorch names)
 *                        optimizer.safetensors   optimizer tensors as state.<param index>.<name>
 *                        checkpoint.json         step, optimizer scalars and groups, scheduler,
 *                                                scaler and sampler state, RNG state, extra
 *
 * A checkpoint folder is written under a temporary name and renamed into place once every file
 * in it is durable, so `latest()` only ever sees complete checkpoints: a process killed during a
 * save leaves the previous one intact. With a process group of several ranks only rank 0 writes;
 * the others wait for it and reject if its save failed.
 */
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Tensor } from '../tensor';
import { getRngState, setRngState } from '../random';
import { argError, checkOptions, describe, flockError } from '../errors';
import { barrier, getRank, getStore, getWorldSize, isInitialized } from '../distributed/process_group';
import { load as loadTensors, save as saveTensors, type StateDict } from './safetensors';
import { fsyncDir, ioError, tempOwner, tempSibling, writeFileAtomic } from './atomic';

/** Anything with PyTorch-style state: a Module, an optimizer, a scheduler, a sampler, a GradScaler. */
export interface Stateful<S = unknown> {
  stateDict(): S;
  loadStateDict(state: S): unknown;
}

interface ModuleLike {
  stateDict(): StateDict;
  loadStateDict(state: Record<string, Tensor>, options?: { strict?: boolean }): unknown;
}

interface OptimizerLike {
  stateDict(): {
    state: Record<number, Record<string, Tensor | number>>;
    paramGroups: Array<Record<string, unknown> & { params: number[] }>;
  };
  loadStateDict(state: {
    state: Record<number, Record<string, Tensor | number>>;
    paramGroups: Array<Record<string, unknown> & { params: number[] }>;
  }): unknown;
}

export interface CheckpointObjects {
  /** A Module (or a wrapper with `.module`, such as DistributedDataParallel). */
  model?: ModuleLike | { module: ModuleLike };
  optimizer?: OptimizerLike;
  scheduler?: Stateful;
  /** A GradScaler, or anything else with stateDict/loadStateDict. */
  scaler?: Stateful;
  /** The data order: a DistributedSampler (epoch and position), or a loader with stateDict. */
  sampler?: Stateful;
}

export interface CheckpointSaveOptions extends CheckpointObjects {
  /** The training step this checkpoint follows; names its folder. */
  step: number;
  /** Any JSON-serialisable value, returned by load(). */
  extra?: unknown;
  /** Keep only the newest k checkpoints in `dir` (older ones are deleted after a successful save). */
  keepLast?: number;
}

export interface CheckpointLoadOptions extends CheckpointObjects {
  /** Where the optimizer's and model's tensors are read to before being copied in (default 'cpu'). */
  device?: string;
  /** Passed to the model's loadStateDict (default true). */
  strict?: boolean;
}

export interface CheckpointInfo {
  /** The checkpoint folder loaded. */
  path: string;
  step: number;
  extra: unknown;
}

interface Manifest {
  format: 'flockml-checkpoint';
  version: 1;
  step: number;
  files: { model?: string; optimizer?: string };
  optimizer?: { paramGroups: unknown[]; scalars: Record<string, Record<string, number>>; tensors: Record<string, string[]> };
  scheduler?: unknown;
  scaler?: unknown;
  sampler?: unknown;
  rng: { seed: number; offset: number };
  extra?: unknown;
  worldSize: number;
}

const STEP_DIR = /^step-(\d+)$/;
const MANIFEST = 'checkpoint.json';
const stepDirName = (step: number) => `step-${String(step).padStart(9, '0')}`;
let collectiveCount = 0;

function isStateful(v: unknown): v is Stateful {
  return !!v && typeof (v as Stateful).stateDict === 'function' && typeof (v as Stateful).loadStateDict === 'function';
}

function moduleOf(op: string, model: unknown): ModuleLike {
  if (isStateful(model)) return model as ModuleLike;
  const inner = (model as { module?: unknown } | null)?.module;
  if (isStateful(inner)) return inner as ModuleLike;
  throw argError(op, `model must be a Module (or have .module), got ${describe(model)}`);
}

function checkObjects(op: string, o: CheckpointObjects): void {
  if (o.model !== undefined) moduleOf(op, o.model);
  for (const key of ['optimizer', 'scheduler', 'scaler', 'sampler'] as const)
    if (o[key] !== undefined && !isStateful(o[key]))
      throw argError(op, `${key} must have stateDict() and loadStateDict(), got ${describe(o[key])}`);
}

/** Splits an optimizer state dict into tensors (for safetensors) and scalars (for the manifest). */
function splitOptimizer(sd: ReturnType<OptimizerLike['stateDict']>): [Record<string, Tensor>, NonNullable<Manifest['optimizer']>] {
  const tensors: Record<string, Tensor> = {};
  const meta: NonNullable<Manifest['optimizer']> = { paramGroups: sd.paramGroups, scalars: {}, tensors: {} };
  for (const [i, s] of Object.entries(sd.state)) {
    for (const [k, v] of Object.entries(s)) {
      if (v instanceof Tensor) {
        tensors[`state.${i}.${k}`] = v;
        (meta.tensors[i] ??= []).push(k);
      } else {
        (meta.scalars[i] ??= {})[k] = v;
      }
    }
  }
  return [tensors, meta];
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function writeCheckpoint(dir: string, o: CheckpointSaveOptions): Promise<string> {
  const op = 'checkpoint.save';
  const final = join(dir, stepDirName(o.step));
  const tmp = tempSibling(final);
  try {
    await mkdir(dir, { recursive: true });
    await mkdir(tmp);
    const manifest: Manifest = {
      format: 'flockml-checkpoint',
      version: 1,
      step: o.step,
      files: {},
      rng: getRngState(),
      worldSize: isInitialized() ? getWorldSize() : 1,
    };
    if (o.model !== undefined) {
      await saveTensors(moduleOf(op, o.model).stateDict(), join(tmp, 'model.safetensors'), { metadata: { format: 'pt' } });
      manifest.files.model = 'model.safetensors';
    }
    if (o.optimizer !== undefined) {
      const [tensors, meta] = splitOptimizer(o.optimizer.stateDict());
      await saveTensors(tensors, join(tmp, 'optimizer.safetensors'), { metadata: { format: 'pt' } });
      manifest.files.optimizer = 'optimizer.safetensors';
      manifest.optimizer = meta;
    }
    if (o.scheduler !== undefined) manifest.scheduler = o.scheduler.stateDict();
    if (o.scaler !== undefined) manifest.scaler = o.scaler.stateDict();
    if (o.sampler !== undefined) manifest.sampler = o.sampler.stateDict();
    if (o.extra !== undefined) manifest.extra = o.extra;
    await writeFileAtomic(op, join(tmp, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    await fsyncDir(tmp);
    // Re-saving a step replaces it: the old folder moves aside first (rename cannot replace a
    // non-empty directory); a crash in between leaves the previous step as the latest.
    if (await exists(final)) {
      const old = tempSibling(final);
      await rename(final, old);
      await rename(tmp, final);
      await rm(old, { recursive: true, force: true });
    } else {
      await rename(tmp, final);
    }
    await fsyncDir(dir);
    return final;
  } catch (e) {
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw ioError(op, final, e);
  }
}

/** Folders of complete checkpoints in `dir`, oldest first. */
async function checkpoints(dir: string): Promise<Array<{ step: number; path: string }>> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: Array<{ step: number; path: string }> = [];
  for (const name of names) {
    const m = STEP_DIR.exec(name);
    if (m && (await exists(join(dir, name, MANIFEST)))) out.push({ step: Number(m[1]), path: join(dir, name) });
  }
  return out.sort((a, b) => a.step - b.step);
}

/** Removes checkpoints beyond the newest `keep`, and temporary folders left by processes that died mid-save. */
async function prune(dir: string, keep: number | undefined): Promise<void> {
  for (const name of await readdir(dir)) {
    const pid = tempOwner(name);
    if (pid === null || pid === process.pid) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch (e) {
      alive = (e as NodeJS.ErrnoException).code === 'EPERM';
    }
    if (!alive) await rm(join(dir, name), { recursive: true, force: true });
  }
  if (keep === undefined) return;
  const all = await checkpoints(dir);
  for (const c of all.slice(0, Math.max(0, all.length - keep))) await rm(c.path, { recursive: true, force: true });
}

/**
 * Saves a training checkpoint to `<dir>/step-<step>/` and resolves with its path. Model and
 * optimizer tensors go to safetensors files; step, optimizer scalars, scheduler, scaler and
 * sampler state, the RNG state and `extra` to checkpoint.json. With several ranks, rank 0 writes
 * and every rank resolves (or rejects) once it is done.
 */
export async function save(dir: string, options: CheckpointSaveOptions): Promise<string> {
  const op = 'checkpoint.save';
  const o = checkOptions(op, options, ['model', 'optimizer', 'scheduler', 'scaler', 'sampler', 'step', 'extra', 'keepLast']);
  if (typeof dir !== 'string' || dir === '') throw argError(op, `dir must be a non-empty string, got ${describe(dir)}`);
  if (!Number.isSafeInteger(o.step) || o.step < 0) throw argError(op, `step must be a non-negative integer, got ${describe(o.step)}`);
  if (o.keepLast !== undefined && (!Number.isInteger(o.keepLast) || o.keepLast < 1))
    throw argError(op, `keepLast must be a positive integer, got ${describe(o.keepLast)}`);
  checkObjects(op, o);
  if (o.extra !== undefined) {
    try {
      JSON.stringify(o.extra);
    } catch (e) {
      throw argError(op, `extra must be JSON-serialisable: ${(e as Error).message}`);
    }
  }
  const distributed = isInitialized() && getWorldSize() > 1;
  if (!distributed) {
    const path = await writeCheckpoint(dir, o);
    await prune(dir, o.keepLast);
    return path;
  }
  const store = getStore();
  const tag = `flockml/checkpoint/${collectiveCount++}`;
  if (getRank() === 0) {
    let report = 'ok';
    try {
      await writeCheckpoint(dir, o);
      await prune(dir, o.keepLast);
    } catch (e) {
      report = (e as Error).message;
    }
    await store.set(tag, report);
  }
  await barrier().wait();
  const report = String(await store.get(tag));
  if (report !== 'ok') throw flockError('ERR_IO', op, `rank 0 failed to save: ${report}`);
  return join(dir, stepDirName(o.step));
}

/** The newest complete checkpoint folder in `dir`, or null when there is none. */
export async function latest(dir: string): Promise<string | null> {
  const all = await checkpoints(dir);
  return all.length ? all[all.length - 1].path : null;
}

async function readManifest(op: string, path: string): Promise<Manifest> {
  const file = join(path, MANIFEST);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw ioError(op, file, e);
  }
  let m: Manifest;
  try {
    m = JSON.parse(text);
  } catch (e) {
    throw flockError('ERR_FORMAT', op, `${file}: not JSON (${(e as Error).message})`);
  }
  if (m?.format !== 'flockml-checkpoint' || m.version !== 1 || !Number.isSafeInteger(m.step))
    throw flockError('ERR_FORMAT', op, `${file}: not a flockml checkpoint manifest (version 1)`);
  return m;
}

/**
 * Restores the given objects from a checkpoint: `dir` is a checkpoint folder, or a folder of them
 * (the newest is used). Everything is read and checked before anything is changed; then the model,
 * optimizer, scheduler, scaler, sampler and the RNG state are restored. Resolves with the step and
 * `extra`.
 */
export async function load(dir: string, options: CheckpointLoadOptions = {}): Promise<CheckpointInfo> {
  const op = 'checkpoint.load';
  const o = checkOptions(op, options, ['model', 'optimizer', 'scheduler', 'scaler', 'sampler', 'device', 'strict']);
  if (typeof dir !== 'string' || dir === '') throw argError(op, `dir must be a non-empty string, got ${describe(dir)}`);
  checkObjects(op, o);
  const path = (await exists(join(dir, MANIFEST))) ? dir : await latest(dir);
  if (path === null) throw flockError('ERR_NOT_FOUND', op, `no checkpoint in ${dir}`);
  const m = await readManifest(op, path);
  const need = (what: string, present: unknown) => {
    if (present === undefined) throw flockError('ERR_STATE_DICT', op, `${path} holds no ${what} state`);
  };
  if (o.model) need('model', m.files.model);
  if (o.optimizer) need('optimizer', m.files.optimizer);
  if (o.scheduler) need('scheduler', m.scheduler);
  if (o.scaler) need('scaler', m.scaler);
  if (o.sampler) need('sampler', m.sampler);
  const device = o.device ?? 'cpu';
  const modelState = o.model ? await loadTensors(join(path, m.files.model!), { device }) : null;
  const optimState = o.optimizer ? await loadTensors(join(path, m.files.optimizer!), { device }) : null;
  try {
    if (modelState) moduleOf(op, o.model).loadStateDict(modelState, { strict: o.strict ?? true });
    if (optimState && o.optimizer) {
      const meta = m.optimizer!;
      const state: Record<number, Record<string, Tensor | number>> = {};
      for (const [i, scalars] of Object.entries(meta.scalars)) state[Number(i)] = { ...scalars };
      for (const [i, names] of Object.entries(meta.tensors)) {
        for (const k of names) {
          const t = optimState[`state.${i}.${k}`];
          if (!t) throw flockError('ERR_FORMAT', op, `${join(path, m.files.optimizer!)} lacks 'state.${i}.${k}'`);
          (state[Number(i)] ??= {})[k] = t;
        }
      }
      o.optimizer.loadStateDict({ state, paramGroups: meta.paramGroups as Array<Record<string, unknown> & { params: number[] }> });
    }
    if (o.scheduler) o.scheduler.loadStateDict(m.scheduler);
    if (o.scaler) o.scaler.loadStateDict(m.scaler);
    if (o.sampler) o.sampler.loadStateDict(m.sampler);
    setRngState(m.rng);
  } finally {
    // loadStateDict copies values in, so what was read is no longer needed.
    for (const s of [modelState, optimState]) if (s) for (const t of Object.values(s)) t.dispose();
  }
  return { path, step: m.step, extra: m.extra };
}
