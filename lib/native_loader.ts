/**
 * Finds and loads the native addon: a local build (build/Release, made in a checkout or by an
 * explicit source build), else the prebuilt platform package (@flockml/linux-x64-gnu), else an
 * ERR_NOT_FOUND error that says what was looked for, on which platform, and how to get an addon.
 *
 * A local build wins over the prebuilt because one only exists when someone asked for it: the
 * install script never builds when the prebuilt is installed (sharp and node-llama-cpp order them
 * the same way).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { FlockError } from './errors';

/** Where the loaded addon came from. */
export interface AddonSource {
  /**
   * 'prebuilt': the platform package; 'local': build/Release/flockml.node; 'override': the file
   * FLOCKML_NATIVE names (the CUDA simulator's addon, build-sim/sim/flockml.node, is loaded this way).
   */
  kind: 'prebuilt' | 'local' | 'override';
  /** Absolute path of the .node file. */
  path: string;
  /** The platform package's name and version, for a prebuilt. */
  package?: string;
}

/** The platform this process runs on, as the platform packages name it. */
export interface Platform {
  os: string;
  arch: string;
  /** 'glibc', 'musl', or '' off Linux. */
  libc: string;
}

/** Platforms with a prebuilt package, keyed `os-arch-libc`. */
const PREBUILT: Readonly<Record<string, string>> = { 'linux-x64-glibc': '@flockml/linux-x64-gnu' };

/** The prebuilt package for `p`, or null where none is published. */
export function prebuiltPackage(p: Platform): string | null {
  return PREBUILT[`${p.os}-${p.arch}-${p.libc}`] ?? null;
}

/** This process's platform; musl is told from glibc by its dynamic loader in /lib (as detect-libc does). */
function currentPlatform(): Platform {
  let libc = '';
  if (process.platform === 'linux') {
    let names: string[] = [];
    try {
      names = readdirSync('/lib');
    } catch {}
    libc = names.some((n) => n.startsWith('ld-musl-')) ? 'musl' : 'glibc';
  }
  return { os: process.platform, arch: process.arch, libc };
}

/** The folder of the flockml package this file belongs to (lib/ under tsx, dist/lib/ once compiled). */
export function packageRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pj = join(dir, 'package.json');
    if (existsSync(pj) && (JSON.parse(readFileSync(pj, 'utf8')) as { name?: string }).name === 'flockml') return dir;
    if (dirname(dir) === dir) throw new FlockError('ERR_INTERNAL', `flockml: no flockml package.json above ${from}`);
  }
}

/** What the loader needs from the outside world; the tests pass fakes. */
export interface LoaderEnv {
  root: string;
  platform: Platform;
  exists(path: string): boolean;
  /** The package.json of `name` as resolved from `root`, or null when it is not installed. */
  resolvePackage(name: string): { dir: string; version: string } | null;
  load(path: string): unknown;
  /** FLOCKML_NATIVE: an addon to load instead of looking; absent or '' to look. */
  override?: string;
}

function defaultEnv(): LoaderEnv {
  const root = packageRoot();
  return {
    root,
    platform: currentPlatform(),
    exists: existsSync,
    resolvePackage(name) {
      try {
        const pj = require.resolve(`${name}/package.json`, { paths: [root] });
        return { dir: dirname(pj), version: (JSON.parse(readFileSync(pj, 'utf8')) as { version: string }).version };
      } catch {
        return null;
      }
    },
    load: (path) => require(path),
    override: process.env.FLOCKML_NATIVE,
  };
}

function ownVersion(root: string): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Loads the addon from the first place that has a loadable one. Throws ERR_NOT_FOUND listing every
 * place looked at and why each was passed over (absent, wrong version, or failed to load: an older
 * glibc than the prebuilt needs shows up here).
 */
export function loadAddon(env: LoaderEnv = defaultEnv(), version: string = ownVersion(env.root)): { addon: unknown; source: AddonSource } {
  if (env.override) {
    // An explicit choice is never passed over for another addon: a broken one is an error.
    const path = resolve(env.root, env.override);
    if (!env.exists(path)) throw new FlockError('ERR_NOT_FOUND', `flockml: FLOCKML_NATIVE names ${path}, which does not exist`);
    try {
      return { addon: env.load(path), source: { kind: 'override', path } };
    } catch (e) {
      throw new FlockError('ERR_NOT_FOUND', `flockml: FLOCKML_NATIVE names ${path}, which failed to load: ${(e as Error).message}`);
    }
  }
  const tried: string[] = [];
  const local = join(env.root, 'build', 'Release', 'flockml.node');
  if (env.exists(local)) {
    try {
      return { addon: env.load(local), source: { kind: 'local', path: local } };
    } catch (e) {
      tried.push(`the local build ${local}: failed to load: ${(e as Error).message}`);
    }
  } else {
    tried.push(`a local build at ${local}: not built`);
  }
  const { os, arch, libc } = env.platform;
  const pkg = prebuiltPackage(env.platform);
  if (pkg) {
    const found = env.resolvePackage(pkg);
    if (!found) tried.push(`the prebuilt package ${pkg}: not installed`);
    else if (found.version !== version) tried.push(`the prebuilt package ${pkg}: version ${found.version}, flockml is ${version}`);
    else {
      const path = join(found.dir, 'flockml.node');
      try {
        return { addon: env.load(path), source: { kind: 'prebuilt', path, package: `${pkg}@${found.version}` } };
      } catch (e) {
        tried.push(`the prebuilt ${path}: failed to load: ${(e as Error).message}`);
      }
    }
  } else {
    tried.push(`a prebuilt package: none is published for ${os}-${arch}${libc ? ` (${libc})` : ''}; prebuilts exist for linux-x64 (glibc)`);
  }
  const lines = [
    `flockml: no native addon could be loaded on ${os}-${arch}${libc ? ` (${libc})` : ''}, node ${process.version}. Looked for:`,
    ...tried.map((t) => `  - ${t}`),
    pkg
      ? `Install the prebuilt (npm installs it with flockml unless optional dependencies are omitted): npm install ${pkg}@${version}`
      : 'No prebuilt exists for this platform; a source build is the only way (Linux x64 is the only platform it is tested on).',
    'Or build from source (needs cmake >= 3.18 and g++; CUDA is included when nvcc is on PATH):',
    '  npm install --save-dev cmake-js@^8 node-addon-api@^8 && npx flockml build',
  ];
  throw new FlockError('ERR_NOT_FOUND', lines.join('\n'));
}
