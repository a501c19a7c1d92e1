/**
 * Durable small files and directories from TypeScript (manifests, indexes, checkpoint folders):
 * write to a temporary name, fsync, rename into place, fsync the parent directory. Tensor files
 * get the same treatment natively (cpp/io/atomic_file.cc). A writer killed mid-save leaves its
 * temporary behind; the next save to the same place removes it ({@link removeDeadTemps}).
 */
import { readdirSync, rmSync } from 'node:fs';
import { open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { flockError, isFlockError } from '../errors';

/** A name in `path`'s directory that no other writer picks: `.<base>.tmp-<pid>-<random>`. */
export function tempSibling(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** The pid a {@link tempSibling} name (or the native writer's, same pattern) was made by, or null for other names. */
function tempOwner(name: string): number | null {
  const m = /\.tmp-(\d+)-[0-9a-f]+$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Whether process `pid` is gone (one we may not signal exists, so it is alive). */
function isGone(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/** The temporaries among `names` whose writer is gone; with `target`, only those of that file name. */
function deadTemps(names: readonly string[], target?: string): string[] {
  const prefix = target === undefined ? '.' : `.${target}.tmp-`;
  return names.filter((name) => {
    const pid = name.startsWith(prefix) ? tempOwner(name) : null;
    return pid !== null && isGone(pid);
  });
}

/**
 * Removes the temporary files and folders in `dir` that writers which died mid-save left (a
 * killed save of a large file leaves one as large); with `target`, only those of that file name.
 * Temporaries of live processes, this one included, are left alone. Best effort: what cannot be
 * listed or removed now is left for the next save, and this never rejects.
 */
export async function removeDeadTemps(dir: string, target?: string): Promise<void> {
  const names = await readdir(dir).catch(() => []);
  for (const name of deadTemps(names, target)) await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
}

/** Blocking twin of {@link removeDeadTemps}. */
export function removeDeadTempsSync(dir: string, target?: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of deadTemps(names, target)) {
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
    } catch {
      // left for the next save
    }
  }
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
  await removeDeadTemps(dirname(path), basename(path));
}

/** ERR_IO naming the path and the system's reason. */
export function ioError(op: string, path: string, e: unknown): Error {
  if (isFlockError(e)) return e;
  return flockError('ERR_IO', op, `${path}: ${(e as Error)?.message ?? String(e)}`);
}
