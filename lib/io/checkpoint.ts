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
 * save leaves the previous one intact. Re-saving a step moves the old folder aside to
 * `step-<step>.old` (which `latest()` and `load()` use while no `step-<step>` exists), renames
 * the new one into place, then removes the old: at every moment one complete folder holds the
 * step. With a process group of several ranks only rank 0 writes; the others wait for it and
 * reject if its save failed.
 *
 * Loading is all-or-nothing: every file and entry is read and checked before any object changes,
 * and the file names in checkpoint.json must stay inside the checkpoint folder.
 */
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Tensor } from '../tensor';
import { getRngState, setRngState } from '../random';
import { type ErrorCode, argError, checkOptions, describe, flockError, isFlockError } from '../errors';
import { checkBool } from '../validate';
import { checkStateDict } from './state_dict';
import { barrier, getRank, getStore, getWorldSize, isInitialized } from '../distributed/process_group';
import { load as loadTensors, save as saveTensors, type StateDict } from './safetensors';
import { fsyncDir, ioError, removeDeadTemps, tempSibling, writeFileAtomic } from './atomic';
import { pathInside } from './confine';

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
  /** The step saved: the last one run before the save. */
  step: number;
  /** The step a resumed run starts with (step + 1): starting at `step` would run the saved step twice. */
  nextStep: number;
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
/** A step's folder, or (suffix `.old`) its previous version while a re-save swaps it. */
const STEP_ENTRY = /^step-(\d+)(\.old)?$/;
const PREVIOUS = '.old';
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

/** Removes a folder: renamed to a temporary name first, so a crash mid-removal leaves no half folder under its name. */
async function retire(path: string): Promise<void> {
  const gone = tempSibling(path);
  try {
    await rename(path, gone);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  await rm(gone, { recursive: true, force: true });
}

/**
 * Renames the complete folder `tmp` to `final`. An existing complete `final` moves aside to
 * `final.old` first (rename cannot replace a non-empty folder) and is removed once the new one
 * is in place; a crash in between leaves `final.old`, which checkpoints() takes for the step.
 */
async function swapIn(dir: string, tmp: string, final: string): Promise<void> {
  const previous = final + PREVIOUS;
  if (await exists(join(final, MANIFEST))) {
    await retire(previous); // a complete `final` makes any older `.old` stale
    await rename(final, previous);
    await fsyncDir(dir);
  } else if (await exists(final)) {
    await retire(final); // not a complete checkpoint: nothing in it to keep
  }
  await rename(tmp, final);
  await fsyncDir(dir);
  await retire(previous);
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
    await swapIn(dir, tmp, final);
    return final;
  } catch (e) {
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw ioError(op, final, e);
  }
}

interface StepFolders {
  step: number;
  /** The complete folder that holds the step: `step-N`, else `step-N.old`. */
  path: string;
  /** Every folder of the step (both names when both exist). */
  folders: string[];
}

/** The complete checkpoints in `dir`, oldest first. */
async function checkpoints(dir: string): Promise<StepFolders[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const byStep = new Map<number, { folders: string[]; current?: string; previous?: string }>();
  for (const name of names) {
    const m = STEP_ENTRY.exec(name);
    if (!m) continue;
    const path = join(dir, name);
    const found = byStep.get(Number(m[1])) ?? { folders: [] };
    byStep.set(Number(m[1]), found);
    found.folders.push(path);
    if (await exists(join(path, MANIFEST))) found[m[2] === undefined ? 'current' : 'previous'] = path;
  }
  const out: StepFolders[] = [];
  for (const [step, { folders, current, previous }] of byStep) {
    const path = current ?? previous;
    if (path !== undefined) out.push({ step, path, folders });
  }
  return out.sort((a, b) => a.step - b.step);
}

/** Removes checkpoints beyond the newest `keep`, previous versions no longer needed, and what saves that died left. */
async function prune(dir: string, keep: number | undefined): Promise<void> {
  await removeDeadTemps(dir);
  const all = await checkpoints(dir);
  for (const c of all) if (!c.path.endsWith(PREVIOUS)) for (const f of c.folders) if (f.endsWith(PREVIOUS)) await retire(f);
  if (keep === undefined) return;
  for (const c of all.slice(0, Math.max(0, all.length - keep))) for (const f of c.folders) await retire(f);
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

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

async function readManifest(op: string, file: string): Promise<Manifest> {
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
  if (!isRecord(m.files)) throw flockError('ERR_FORMAT', op, `${file}: 'files' must be an object, got ${describe(m.files)}`);
  return m;
}

/** The checkpoint folder `dir` names: itself, its `.old` when a re-save of it died mid-swap, or the newest in it. */
async function resolveCheckpoint(dir: string): Promise<string | null> {
  if (await exists(join(dir, MANIFEST))) return dir;
  const previous = join(dirname(dir), basename(dir) + PREVIOUS);
  if (STEP_DIR.test(basename(dir)) && (await exists(join(previous, MANIFEST)))) return previous;
  return latest(dir);
}

/** Checks the manifest's RNG state by the rule setRngState applies, leaving the generator as it is. */
function checkRng(op: string, file: string, rng: unknown): void {
  const now = getRngState();
  try {
    setRngState(rng as Manifest['rng']);
  } catch {
    throw flockError('ERR_FORMAT', op, `${file}: 'rng' must be { seed, offset } of non-negative safe integers, got ${JSON.stringify(rng)}`);
  } finally {
    setRngState(now);
  }
}

/**
 * The optimizer's state dict: groups and scalars from the manifest, tensors from `file`. Every
 * tensor the manifest lists must be in the file and every tensor in the file listed.
 */
function optimizerState(
  op: string,
  manifestFile: string,
  file: string,
  meta: unknown,
  tensors: Record<string, Tensor>,
): ReturnType<OptimizerLike['stateDict']> {
  const bad = (detail: string) => flockError('ERR_FORMAT', op, detail);
  if (!isRecord(meta) || !Array.isArray(meta.paramGroups) || !isRecord(meta.scalars) || !isRecord(meta.tensors))
    throw bad(`${manifestFile}: 'optimizer' must be { paramGroups: [...], scalars: {...}, tensors: {...} }`);
  const state: Record<number, Record<string, Tensor | number>> = {};
  const entry = (table: string, i: string, value: unknown) => {
    if (!/^\d+$/.test(i)) throw bad(`${manifestFile}: optimizer.${table} has key '${i}', not a parameter index`);
    if (!isRecord(value) && !(table === 'tensors' && Array.isArray(value)))
      throw bad(`${manifestFile}: optimizer.${table}.${i} must be ${table === 'tensors' ? 'an array of names' : 'an object'}`);
    state[Number(i)] ??= {};
    return state[Number(i)];
  };
  for (const [i, scalars] of Object.entries(meta.scalars)) {
    const s = entry('scalars', i, scalars);
    for (const [k, v] of Object.entries(scalars as Record<string, unknown>)) {
      if (typeof v !== 'number') throw bad(`${manifestFile}: optimizer.scalars.${i}.${k} must be a number, got ${describe(v)}`);
      s[k] = v;
    }
  }
  const listed = new Set<string>();
  for (const [i, names] of Object.entries(meta.tensors)) {
    const s = entry('tensors', i, names);
    for (const k of names as unknown[]) {
      if (typeof k !== 'string' || Object.hasOwn(s, k))
        throw bad(`${manifestFile}: optimizer.tensors.${i} lists ${describe(k)}, which is not a name or is listed twice`);
      const key = `state.${i}.${k}`;
      if (!Object.hasOwn(tensors, key)) throw bad(`${file} lacks '${key}', which ${manifestFile} lists`);
      s[k] = tensors[key];
      listed.add(key);
    }
  }
  for (const key of Object.keys(tensors)) if (!listed.has(key)) throw bad(`${file} holds '${key}', which ${manifestFile} does not list`);
  return { state, paramGroups: meta.paramGroups as Array<Record<string, unknown> & { params: number[] }> };
}

/** Codes that say the state itself did not fit; others (out of memory, a lost device) pass unchanged. */
const STATE_CODES: ReadonlySet<ErrorCode> = new Set([
  'ERR_ARG',
  'ERR_DTYPE',
  'ERR_SHAPE',
  'ERR_INDEX',
  'ERR_RANGE',
  'ERR_FORMAT',
  'ERR_STATE_DICT',
]);

interface Restore {
  what: string;
  target: Stateful;
  state: unknown;
  /** Whether to load back what its stateDict() gave before when an object after it refuses its state. */
  undoable: boolean;
  /** Whether its loadStateDict may change it and then throw (ChainedScheduler loads one scheduler after another). */
  mayStopHalfway?: boolean;
}

/**
 * Loads each state in order. When one is refused, every object loaded before it gets back what
 * its stateDict() gave before (newest first), and so does the refusing one if it may have
 * stopped half-way; the error is ERR_STATE_DICT naming the checkpoint and the object.
 */
function restoreAll(op: string, path: string, restores: Restore[]): void {
  const undo: Array<() => void> = [];
  try {
    for (const r of restores) {
      const before = r.undoable ? r.target.stateDict() : undefined;
      const back = () => r.target.loadStateDict(before);
      if (r.undoable && r.mayStopHalfway) undo.push(back);
      try {
        r.target.loadStateDict(r.state);
      } catch (e) {
        if (isFlockError(e) && !STATE_CODES.has(e.code)) throw e;
        throw flockError('ERR_STATE_DICT', op, `${path}: the ${r.what} state does not load: ${(e as Error)?.message ?? String(e)}`);
      }
      if (r.undoable && !r.mayStopHalfway) undo.push(back);
    }
  } catch (e) {
    for (const back of undo.reverse()) {
      try {
        back();
      } catch {
        // Each undo is independent; the refusal is the error to report.
      }
    }
    throw e;
  }
}

/**
 * Restores the given objects from a checkpoint: `dir` is a checkpoint folder, or a folder of them
 * (the newest is used). All or nothing: the manifest, the RNG state, every tensor file (whose
 * names must stay inside the checkpoint folder) and every model entry (names, shapes, dtypes)
 * are read and checked before any object changes; then the scheduler, scaler, optimizer, sampler,
 * model and RNG state are loaded in that order, and if one refuses its state (each checks its own
 * in full before changing), those loaded before it get their previous state back. A failure
 * rejects with ERR_FORMAT (a damaged checkpoint) or ERR_STATE_DICT (a state that does not fit
 * the objects) naming the file and entry. Resolves with the step saved, the step to run next
 * (`nextStep`, where the resumed loop starts) and `extra`.
 */
export async function load(dir: string, options: CheckpointLoadOptions = {}): Promise<CheckpointInfo> {
  const op = 'checkpoint.load';
  const o = checkOptions(op, options, ['model', 'optimizer', 'scheduler', 'scaler', 'sampler', 'device', 'strict']);
  if (typeof dir !== 'string' || dir === '') throw argError(op, `dir must be a non-empty string, got ${describe(dir)}`);
  checkObjects(op, o);
  const strict = checkBool(op, 'strict', o.strict ?? true);
  const path = await resolveCheckpoint(dir);
  if (path === null) throw flockError('ERR_NOT_FOUND', op, `no checkpoint in ${dir}`);
  const manifestFile = join(path, MANIFEST);
  const m = await readManifest(op, manifestFile);
  const need = (what: string, present: unknown) => {
    if (present === undefined) throw flockError('ERR_STATE_DICT', op, `${path} holds no ${what} state`);
  };
  if (o.model) need('model', m.files.model);
  if (o.optimizer) need('optimizer', m.files.optimizer);
  if (o.scheduler) need('scheduler', m.scheduler);
  if (o.scaler) need('scaler', m.scaler);
  if (o.sampler) need('sampler', m.sampler);
  checkRng(op, manifestFile, m.rng);
  const module = o.model ? moduleOf(op, o.model) : null;
  const modelFile = module ? await pathInside(op, path, m.files.model, `${manifestFile}: files.model`) : null;
  const optimizerFile = o.optimizer ? await pathInside(op, path, m.files.optimizer, `${manifestFile}: files.optimizer`) : null;
  const device = o.device ?? 'cpu';
  const read: Array<Record<string, Tensor>> = [];
  try {
    // 1. Read and check; nothing has changed yet.
    let modelState: Record<string, Tensor> | null = null;
    if (module && modelFile) {
      modelState = await loadTensors(modelFile, { device });
      read.push(modelState);
      const own = module.stateDict();
      checkStateDict(own instanceof Map ? Object.fromEntries(own) : own, new Map(Object.entries(modelState)), strict, (_, detail) =>
        flockError('ERR_STATE_DICT', op, `${modelFile}: ${detail}`),
      );
    }
    let optimState: ReturnType<OptimizerLike['stateDict']> | null = null;
    if (optimizerFile) {
      const tensors = await loadTensors(optimizerFile, { device });
      read.push(tensors);
      optimState = optimizerState(op, manifestFile, optimizerFile, m.optimizer, tensors);
      // An optimizer that can check its state without loading it does so now (the library's
      // optimizers can); any other is put back if it refuses below.
      const checker = o.optimizer as { checkStateDict?: (sd: unknown) => unknown };
      if (typeof checker.checkStateDict === 'function') {
        try {
          checker.checkStateDict(optimState);
        } catch (e) {
          if (isFlockError(e) && !STATE_CODES.has(e.code)) throw e;
          throw flockError('ERR_STATE_DICT', op, `${path}: the optimizer state does not load: ${(e as Error)?.message ?? String(e)}`);
        }
      }
    }
    // 2. Load. The scheduler's and scaler's states are small and come back exactly from their
    // stateDict(), so they go first; a sampler's stateDict() does not give back a pass in
    // progress, so it goes after the optimizer; the model, checked above, and the RNG, last.
    const restores: Restore[] = [];
    if (o.scheduler) restores.push({ what: 'scheduler', target: o.scheduler, state: m.scheduler, undoable: true, mayStopHalfway: true });
    if (o.scaler) restores.push({ what: 'scaler', target: o.scaler, state: m.scaler, undoable: true, mayStopHalfway: true });
    if (o.optimizer) restores.push({ what: 'optimizer', target: o.optimizer as Stateful, state: optimState, undoable: true });
    if (o.sampler) restores.push({ what: 'sampler', target: o.sampler, state: m.sampler, undoable: true });
    if (module) {
      const target = {
        stateDict: () => undefined,
        loadStateDict: (s: unknown) => module.loadStateDict(s as Record<string, Tensor>, { strict }),
      };
      restores.push({ what: 'model', target, state: modelState, undoable: false });
    }
    const rng = { stateDict: getRngState, loadStateDict: (s: unknown) => setRngState(s as Manifest['rng']) };
    restores.push({ what: 'RNG', target: rng, state: m.rng, undoable: true });
    restoreAll(op, path, restores);
  } finally {
    // loadStateDict copies values in, so what was read is no longer needed.
    for (const s of read) for (const t of Object.values(s)) t.dispose();
  }
  return { path, step: m.step, nextStep: m.step + 1, extra: m.extra };
}
