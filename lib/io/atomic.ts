/**
 * Durable small files and directories from TypeScript (manifests, indexes, checkpoint folders):
 * write to a temporary name, fsync, rename into place, fsync the parent directory. Tensor files
 * get the same treatment natively (cpp/io/atomic_file.cc).
 */
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { flockError, isFlockError } from '../errors';

/** A name in `path`'s directory that no other writer picks: `.<base>.tmp-<pid>-<random>`. */
export function tempSibling(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** The pid a {@link tempSibling} name was made by, or null for other names. */
export function tempOwner(name: string): number | null {
  const m = /\.tmp-(\d+)-[0-9a-f]+$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Makes a rename or a new entry in `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fd = await open(dir, 'r');
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
}

export async function fsyncFile(path: string): Promise<void> {
  const fd = await open(path, 'r+');
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
}

/** Writes `text` to `path` so that a crash leaves the old content or the new, never a mix. */
export async function writeFileAtomic(op: string, path: string, text: string): Promise<void> {
  const tmp = tempSibling(path);
  try {
    const fd = await open(tmp, 'wx');
    try {
      await fd.writeFile(text, 'utf8');
      await fd.sync();
    } finally {
      await fd.close();
    }
    await rename(tmp, path);
    await fsyncDir(dirname(path));
  } catch (e) {
    await rm(tmp, { force: true });
    throw ioError(op, path, e);
  }
}

/** ERR_IO naming the path and the system's reason. */
export function ioError(op: string, path: string, e: unknown): Error {
  if (isFlockError(e)) return e;
  return flockError('ERR_IO', op, `${path}: ${(e as Error)?.message ?? String(e)}`);
}
