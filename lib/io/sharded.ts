/**
 * Sharded state: each rank writes the part it holds to its own safetensors file, and one index
 * describes the whole, in the layout of Hugging Face's `model.safetensors.index.json`:
 *
 *   model-00001-of-00002.safetensors   rank 0's tensors and pieces
 *   model-00002-of-00002.safetensors   rank 1's
 *   model.safetensors.index.json       { metadata: { total_size, world_size, format },
 *                                        weight_map: { key: file },           (as Hugging Face)
 *                                        shards: { key: { dtype, shape, pieces: [{ file, start, end }] } } }
 *
 * A piece is a flat element range [start, end) of the full tensor in row-major order, so any
 * split (ZeRO's flat shards, rows of a tensor-parallel weight) is described the same way, and a
 * state saved from W ranks loads into any other number of ranks: each loading rank reads only
 * the pieces that overlap the range it asks for. Tensors stored whole have one piece covering
 * them; `weight_map` names the file of each key's first piece, which is all a Hugging Face
 * loader needs when no tensor is split. Each shard file also carries its own pieces in its
 * metadata, so the index can be rebuilt from the files alone.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tensor } from '../tensor';
import { cat } from '../ops/shape';
import { zeros } from '../ops/creation';
import { type CanonicalDType, itemSize } from '../dtype';
import { argError, checkOptions, describe, flockError } from '../errors';
import { getRank, getWorldSize, isInitialized, barrier, getStore } from '../distributed/process_group';
import { inspect, loadNamed, save, type SafetensorsHeader } from './safetensors';
import { ioError, writeFileAtomic } from './atomic';
import { pathInside } from './confine';
import { normalizeDevice } from '../device';
import { checkInt, checkPath } from '../validate';

/** Elements [start, start + tensor's element count) of the row-major flattening of a tensor of `shape`. */
export interface Shard {
  tensor: Tensor;
  shape: number[];
  start: number;
}

export interface ShardIndex {
  metadata: { total_size: number; world_size: number; format: string };
  weight_map: Record<string, string>;
  /** split: saved as pieces (re-split for the loading world size); otherwise stored whole. */
  shards: Record<
    string,
    { dtype: CanonicalDType; shape: number[]; split: boolean; pieces: Array<{ file: string; start: number; end: number }> }
  >;
}

const FORMAT = 'flockml-sharded-v1';
const PIECES_KEY = 'flockml.pieces';

let collectiveCount = 0;

const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** The contiguous, near-even flat range [start, end) of `numel` elements that `rank` of `worldSize` holds. */
export function shardRange(count: number, rank: number, worldSize: number): [number, number] {
  checkInt('shardRange', 'count', count);
  checkRank('shardRange', rank, worldSize);
  const per = Math.ceil(count / worldSize);
  return [Math.min(count, rank * per), Math.min(count, (rank + 1) * per)];
}

/** `model-00001-of-00002.safetensors`: Hugging Face's shard names (1-based). */
export function shardFileName(prefix: string, rank: number, worldSize: number): string {
  checkPrefix('shardFileName', prefix);
  checkRank('shardFileName', rank, worldSize);
  const pad = (n: number) => String(n).padStart(5, '0');
  return `${prefix}-${pad(rank + 1)}-of-${pad(worldSize)}.safetensors`;
}

export interface ShardSaveOptions {
  /** This file's rank and the number of ranks (default: the process group's, else 0 of 1). */
  rank?: number;
  worldSize?: number;
  /** File name prefix (default 'model'). */
  prefix?: string;
  metadata?: Record<string, string>;
}

function rankAndWorld(op: string, o: { rank?: number; worldSize?: number }): [number, number] {
  const init = isInitialized();
  const worldSize = o.worldSize ?? (init ? getWorldSize() : 1);
  const rank = o.rank ?? (init ? getRank() : 0);
  checkRank(op, rank, worldSize);
  return [rank, worldSize];
}

/** ERR_ARG naming `op` unless rank and worldSize are integers with 0 ≤ rank < worldSize. */
function checkRank(op: string, rank: unknown, worldSize: unknown): void {
  if (
    !Number.isInteger(worldSize) ||
    (worldSize as number) < 1 ||
    !Number.isInteger(rank) ||
    (rank as number) < 0 ||
    (rank as number) >= (worldSize as number)
  )
    throw argError(op, `rank ${describe(rank)} is outside world size ${describe(worldSize)}`);
}

/** The state to save: an object of tensors and shards by key. */
function checkState(op: string, state: unknown): void {
  if (state === null || typeof state !== 'object' || Array.isArray(state) || state instanceof Tensor)
    throw argError(op, `state must be an object of tensors and shards by key, got ${describe(state)}`);
}

function checkPrefix(op: string, prefix: unknown): string {
  if (typeof prefix !== 'string' || !/^[\w.-]+$/.test(prefix))
    throw argError(op, `prefix must be a plain file name, got ${describe(prefix)}`);
  return prefix;
}

/** Writes this rank's file of a sharded state: whole tensors and {@link Shard} pieces. Returns its path. */
export async function saveShard(dir: string, state: Record<string, Tensor | Shard>, options?: ShardSaveOptions): Promise<string> {
  const op = 'saveShard';
  checkPath(op, 'dir', dir);
  checkState(op, state);
  const o = checkOptions(op, options, ['rank', 'worldSize', 'prefix', 'metadata']);
  const [rank, worldSize] = rankAndWorld(op, o);
  const prefix = checkPrefix(op, o.prefix ?? 'model');
  const tensors: Record<string, Tensor> = {};
  const pieces: Record<string, { shape: number[]; start: number }> = {};
  for (const [key, v] of Object.entries(state)) {
    if (v instanceof Tensor) {
      tensors[key] = v;
      continue;
    }
    if (!v || !(v.tensor instanceof Tensor) || !Array.isArray(v.shape) || !Number.isInteger(v.start))
      throw argError(op, `'${key}' must be a Tensor or a Shard { tensor, shape, start }, got ${describe(v)}`);
    const n = numel(v.tensor.shape);
    if (v.start < 0 || v.start + n > numel(v.shape))
      throw argError(op, `'${key}': elements [${v.start}, ${v.start + n}) are outside a tensor of shape [${v.shape.join(',')}]`);
    tensors[key] = v.tensor.reshape([n]);
    pieces[key] = { shape: [...v.shape], start: v.start };
  }
  const path = join(dir, shardFileName(prefix, rank, worldSize));
  await mkdir(dir, { recursive: true }).catch((e) => {
    throw ioError(op, dir, e);
  });
  const metadata = {
    format: 'pt',
    ...o.metadata,
    [PIECES_KEY]: JSON.stringify(pieces),
    'flockml.rank': String(rank),
    'flockml.world_size': String(worldSize),
  };
  await save(tensors, path, { metadata });
  return path;
}

/** Builds the index from the shard files' headers (no tensor data is read) and writes it atomically. */
export async function writeShardIndex(dir: string, options?: { worldSize?: number; prefix?: string }): Promise<ShardIndex> {
  const op = 'writeShardIndex';
  checkPath(op, 'dir', dir);
  const o = checkOptions(op, options, ['worldSize', 'prefix']);
  const [, worldSize] = rankAndWorld(op, { rank: 0, worldSize: o.worldSize });
  const prefix = checkPrefix(op, o.prefix ?? 'model');
  const index: ShardIndex = { metadata: { total_size: 0, world_size: worldSize, format: FORMAT }, weight_map: {}, shards: {} };
  for (let r = 0; r < worldSize; r++) {
    const file = shardFileName(prefix, r, worldSize);
    const header: SafetensorsHeader = await inspect(join(dir, file));
    let pieces: Record<string, { shape: number[]; start: number }>;
    try {
      pieces = JSON.parse(header.metadata[PIECES_KEY] ?? '{}');
    } catch {
      throw flockError('ERR_FORMAT', op, `${join(dir, file)}: metadata '${PIECES_KEY}' is not JSON`);
    }
    for (const t of header.tensors) {
      const p = pieces[t.name];
      const shape = p ? p.shape : t.shape;
      const start = p ? p.start : 0;
      const entry = (index.shards[t.name] ??= { dtype: t.dtype, shape, split: false, pieces: [] });
      if (p) entry.split = true;
      if (entry.dtype !== t.dtype || entry.shape.join(',') !== shape.join(','))
        throw flockError(
          'ERR_FORMAT',
          op,
          `'${t.name}' is ${t.dtype} [${shape}] in ${file} but ${entry.dtype} [${entry.shape}] in an earlier shard`,
        );
      const piece = { file, start, end: start + numel(t.shape) };
      // A tensor held whole by several ranks (replicated) is read from the first.
      if (!p && entry.pieces.some((q) => q.start === 0 && q.end === piece.end)) continue;
      entry.pieces.push(piece);
      index.weight_map[t.name] ??= file;
    }
  }
  for (const [key, entry] of Object.entries(index.shards)) {
    entry.pieces.sort((a, b) => a.start - b.start);
    let at = 0;
    for (const p of entry.pieces) {
      if (p.start !== at)
        throw flockError(
          'ERR_FORMAT',
          op,
          `'${key}': pieces ${p.start < at ? 'overlap' : 'leave a gap'} at element ${Math.min(at, p.start)}`,
        );
      at = p.end;
    }
    if (at !== numel(entry.shape)) throw flockError('ERR_FORMAT', op, `'${key}': pieces cover ${at} of ${numel(entry.shape)} elements`);
    index.metadata.total_size += at * itemSize(entry.dtype);
  }
  await writeFileAtomic(op, join(dir, `${prefix}.safetensors.index.json`), `${JSON.stringify(index, null, 2)}\n`);
  return index;
}

/**
 * In a process group: every rank writes its file, then rank 0 writes the index once all files are
 * durable. Resolves on every rank once the index is in place; a rank whose write failed makes
 * every rank reject.
 */
export async function saveSharded(
  dir: string,
  state: Record<string, Tensor | Shard>,
  options?: Omit<ShardSaveOptions, 'rank' | 'worldSize'>,
): Promise<void> {
  const op = 'saveSharded';
  checkPath(op, 'dir', dir);
  checkState(op, state);
  const o = checkOptions(op, options, ['prefix', 'metadata']);
  if (!isInitialized()) {
    await saveShard(dir, state, { ...o, rank: 0, worldSize: 1 });
    await writeShardIndex(dir, { worldSize: 1, prefix: o.prefix });
    return;
  }
  const rank = getRank(),
    worldSize = getWorldSize();
  const store = getStore();
  // Collective calls happen in the same order on every rank, so a counter names this one.
  const tag = `flockml/io/saveSharded/${collectiveCount++}`;
  let failure: string | null = null;
  try {
    await saveShard(dir, state, { ...o, rank, worldSize });
  } catch (e) {
    failure = `rank ${rank}: ${(e as Error).message}`;
  }
  await store.set(`${tag}/${rank}`, failure ?? 'ok');
  await barrier().wait();
  const reports = await Promise.all(Array.from({ length: worldSize }, (_, r) => store.get(`${tag}/${r}`)));
  const bad = reports.map(String).filter((s) => s !== 'ok');
  if (bad.length) throw flockError('ERR_IO', op, bad.join('; '));
  if (rank === 0) {
    try {
      await writeShardIndex(dir, { worldSize, prefix: o.prefix });
    } catch (e) {
      failure = `rank 0 (index): ${(e as Error).message}`;
    }
    await store.set(`${tag}/index`, failure ?? 'ok');
  }
  await barrier().wait();
  const indexed = String(await store.get(`${tag}/index`));
  if (indexed !== 'ok') throw flockError('ERR_IO', op, indexed);
}

export interface ShardLoadOptions {
  /** The rank loading and the number of ranks it shares the state with (default 0 of 1: everything). */
  rank?: number;
  worldSize?: number;
  prefix?: string;
  device?: string;
}

/**
 * Reads and checks `<prefix>.safetensors.index.json`, including that every file it names (in
 * `shards` and `weight_map`) is inside `dir`: an absolute path, a `..` or a symlink out of it is
 * ERR_FORMAT naming the path.
 */
export async function readShardIndex(dir: string, prefix = 'model'): Promise<ShardIndex> {
  const op = 'readShardIndex';
  const path = join(checkPath(op, 'dir', dir), `${checkPrefix(op, prefix)}.safetensors.index.json`);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw ioError(op, path, e);
  }
  let index: ShardIndex;
  try {
    index = JSON.parse(text);
  } catch (e) {
    throw flockError('ERR_FORMAT', op, `${path}: not JSON (${(e as Error).message})`);
  }
  if (!index || typeof index !== 'object' || !index.shards || typeof index.shards !== 'object')
    throw flockError('ERR_FORMAT', op, `${path}: no 'shards' table (written by a tool other than flockml?)`);
  const named = new Map<unknown, string>();
  for (const [key, entry] of Object.entries(index.shards)) {
    if (!entry || typeof entry !== 'object' || !Array.isArray(entry.pieces))
      throw flockError('ERR_FORMAT', op, `${path}: shards['${key}'] has no 'pieces' list`);
    entry.pieces.forEach((p, i) => {
      if (!named.has(p?.file)) named.set(p?.file, `${path}: shards['${key}'].pieces[${i}].file`);
    });
  }
  if (index.weight_map !== undefined) {
    if (!index.weight_map || typeof index.weight_map !== 'object')
      throw flockError('ERR_FORMAT', op, `${path}: 'weight_map' must be an object`);
    for (const [key, file] of Object.entries(index.weight_map)) if (!named.has(file)) named.set(file, `${path}: weight_map['${key}']`);
  }
  for (const [file, entry] of named) await pathInside(op, dir, file, entry);
  return index;
}

/**
 * Loads a sharded state for `rank` of `worldSize` (any world size, not only the one it was saved
 * with). A tensor that was stored whole comes back whole; a split tensor comes back as this
 * rank's {@link shardRange} of it — a {@link Shard}, or the full Tensor when the range covers it
 * (worldSize 1). Only the overlapping pieces are read.
 */
export async function loadSharded(dir: string, options?: ShardLoadOptions): Promise<Record<string, Tensor | Shard>> {
  const op = 'loadSharded';
  checkPath(op, 'dir', dir);
  const o = checkOptions(op, options, ['rank', 'worldSize', 'prefix', 'device']);
  const rank = o.rank ?? 0,
    worldSize = o.worldSize ?? 1;
  shardRange(0, rank, worldSize);
  const device = normalizeDevice(o.device, op);
  const index = await readShardIndex(dir, o.prefix ?? 'model');
  // Which pieces each file must give, then one read per file.
  const plan: Array<{
    key: string;
    shape: number[];
    whole: boolean;
    range: [number, number];
    parts: Array<{ file: string; start: number; end: number }>;
  }> = [];
  const wanted = new Map<string, Set<string>>();
  for (const [key, entry] of Object.entries(index.shards)) {
    const n = numel(entry.shape);
    const whole = !entry.split;
    const range: [number, number] = whole ? [0, n] : shardRange(n, rank, worldSize);
    const parts = whole ? entry.pieces.slice(0, 1) : entry.pieces.filter((p) => p.start < range[1] && p.end > range[0]);
    plan.push({ key, shape: entry.shape, whole, range, parts });
    for (const p of parts) {
      const set = wanted.get(p.file) ?? new Set<string>();
      set.add(key);
      wanted.set(p.file, set);
    }
  }
  const read = new Map<string, Record<string, Tensor>>();
  for (const [file, keys] of wanted) read.set(file, await loadNamed(join(dir, file), [...keys], device));
  const out: Record<string, Tensor | Shard> = {};
  for (const { key, shape, whole, range, parts } of plan) {
    const [s, e] = range;
    if (whole) {
      out[key] = read.get(parts[0].file)![key].reshape(shape);
      continue;
    }
    // Copies, so a shard does not keep the rest of a larger piece's storage alive.
    const slices = parts.map((p) => {
      const a = Math.max(s, p.start) - p.start,
        b = Math.min(e, p.end) - p.start;
      return read.get(p.file)![key].narrow(0, a, b - a);
    });
    const flat =
      slices.length === 0
        ? zeros([0], { dtype: index.shards[key].dtype, device })
        : slices.length === 1
          ? slices[0].clone()
          : cat(slices, 0);
    slices.forEach((t) => t.dispose());
    out[key] = s === 0 && e === numel(shape) ? flat.reshape(shape) : { tensor: flat, shape: [...shape], start: s };
  }
  // Everything returned is a copy or its own view, so the tensors read can go.
  for (const tensors of read.values()) for (const t of Object.values(tensors)) t.dispose();
  return out;
}
