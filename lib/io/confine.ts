/**
 * File names read from a manifest (checkpoint.json, model.safetensors.index.json) stay inside the
 * manifest's folder. The manifest is data anyone may have written or edited: following an
 * absolute path, a `..` or a symlink out of the folder would load weights the user never pointed
 * at, with no error.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep, win32 } from 'node:path';
import { flockError } from '../errors';
import { ioError } from './atomic';

/**
 * `dir/name`, once `name` is checked to name a file inside `dir`: relative, without `..`
 * segments, and (symlinks resolved) inside `dir`'s real location. A name that does not exist
 * passes; reading it reports that. Throws ERR_FORMAT naming `entry` (the manifest and the field
 * that held the name) and the name.
 */
export async function pathInside(op: string, dir: string, name: unknown, entry: string): Promise<string> {
  const bad = (why: string) => flockError('ERR_FORMAT', op, `${entry} ${JSON.stringify(name) ?? String(name)} ${why}`);
  if (typeof name !== 'string' || name === '' || name.includes('\0')) throw bad('is not a file name');
  if (isAbsolute(name) || win32.isAbsolute(name)) throw bad('is an absolute path; files are named relative to their folder');
  if (name.split(/[\\/]/).includes('..')) throw bad("leaves its folder through '..'");
  const path = join(dir, name);
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return path;
  }
  let root: string;
  try {
    root = await realpath(dir);
  } catch (e) {
    throw ioError(op, dir, e);
  }
  const rel = relative(root, real);
  if (rel === '') throw bad('names the folder itself, not a file');
  if (rel.split(sep)[0] === '..' || isAbsolute(rel)) throw bad(`resolves to ${real}, outside its folder ${root} (through a symlink)`);
  return path;
}
