/**
 * lib/native_loader.ts: which addon loads (local build, then the prebuilt platform package), the
 * ERR_NOT_FOUND error when none does, and that the platform package's template agrees with the loader
 * and with package.json. The loader runs against fakes; nothing here builds or installs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FlockError } from '../lib/errors';
import { type LoaderEnv, loadAddon, prebuiltPackage } from '../lib/native_loader';
import { caught } from './helpers/errors';

const repo = join(__dirname, '..');
const root = '/app/node_modules/flockml';
const local = `${root}/build/Release/flockml.node`;
const prebuiltDir = '/app/node_modules/@flockml/linux-x64-gnu';
const linux = { os: 'linux', arch: 'x64', libc: 'glibc' };

function fakeEnv(o: {
  local?: boolean;
  prebuilt?: string | null;
  broken?: string[];
  platform?: LoaderEnv['platform'];
  override?: string;
  files?: string[];
}): LoaderEnv {
  return {
    root,
    platform: o.platform ?? linux,
    override: o.override,
    exists: (p) => (p === local && !!o.local) || !!o.files?.includes(p),
    resolvePackage: (name) => (name === '@flockml/linux-x64-gnu' && o.prebuilt ? { dir: prebuiltDir, version: o.prebuilt } : null),
    load: (p) => {
      if (o.broken?.includes(p)) throw new Error(`${p}: version \`GLIBC_2.35' not found`);
      return { from: p };
    },
  };
}

function notFound(env: LoaderEnv): FlockError {
  const e = caught(() => loadAddon(env, '0.1.0'));
  assert.instance(e, FlockError);
  assert.is((e as FlockError).code, 'ERR_NOT_FOUND');
  return e as FlockError;
}

test('a local build wins; the prebuilt is used when there is none', () => {
  assert.equal(loadAddon(fakeEnv({ local: true, prebuilt: '0.1.0' }), '0.1.0').source, { kind: 'local', path: local });
  const r = loadAddon(fakeEnv({ prebuilt: '0.1.0' }), '0.1.0');
  assert.equal(r.source, { kind: 'prebuilt', path: `${prebuiltDir}/flockml.node`, package: '@flockml/linux-x64-gnu@0.1.0' });
  assert.equal(r.addon, { from: `${prebuiltDir}/flockml.node` });
});

test('a local build that fails to load falls through to the prebuilt', () => {
  assert.is(loadAddon(fakeEnv({ local: true, prebuilt: '0.1.0', broken: [local] }), '0.1.0').source.kind, 'prebuilt');
});

test('FLOCKML_NATIVE loads the addon it names, relative to the package, and never falls back', () => {
  const sim = `${root}/build-sim/sim/flockml.node`;
  const env = fakeEnv({ local: true, prebuilt: '0.1.0', override: 'build-sim/sim/flockml.node', files: [sim] });
  assert.equal(loadAddon(env, '0.1.0').source, { kind: 'override', path: sim });
  const missing = notFound(fakeEnv({ local: true, override: '/nowhere/flockml.node' }));
  assert.match(missing.message, 'FLOCKML_NATIVE names /nowhere/flockml.node, which does not exist');
  const broken = notFound(fakeEnv({ local: true, override: sim, files: [sim], broken: [sim] }));
  assert.match(broken.message, `FLOCKML_NATIVE names ${sim}, which failed to load`);
  assert.match(broken.message, 'GLIBC_2.35');
});

test('nothing found: ERR_NOT_FOUND names each place looked at, the platform and both ways out', () => {
  const e = notFound(fakeEnv({}));
  assert.match(e.message, 'no native addon could be loaded on linux-x64 (glibc)');
  assert.match(e.message, `a local build at ${local}: not built`);
  assert.match(e.message, 'the prebuilt package @flockml/linux-x64-gnu: not installed');
  assert.match(e.message, 'npm install @flockml/linux-x64-gnu@0.1.0');
  assert.match(e.message, 'npx flockml build');
  assert.not.match(e.message, 'Could not locate the bindings file');
});

test('a prebuilt of another version is passed over, and said so', () => {
  assert.match(
    notFound(fakeEnv({ prebuilt: '0.0.9' })).message,
    'the prebuilt package @flockml/linux-x64-gnu: version 0.0.9, flockml is 0.1.0',
  );
});

test('a prebuilt that fails to load (an older glibc) reports the loader error', () => {
  const e = notFound(fakeEnv({ prebuilt: '0.1.0', broken: [`${prebuiltDir}/flockml.node`] }));
  assert.match(e.message, "failed to load: /app/node_modules/@flockml/linux-x64-gnu/flockml.node: version `GLIBC_2.35' not found");
});

test('platforms without a prebuilt: none is looked for, and the message says which exist', () => {
  assert.is(prebuiltPackage({ os: 'linux', arch: 'x64', libc: 'musl' }), null);
  assert.is(prebuiltPackage({ os: 'linux', arch: 'arm64', libc: 'glibc' }), null);
  const e = notFound(fakeEnv({ prebuilt: '0.1.0', platform: { os: 'darwin', arch: 'arm64', libc: '' } }));
  assert.match(e.message, 'no native addon could be loaded on darwin-arm64,');
  assert.match(e.message, 'none is published for darwin-arm64; prebuilts exist for linux-x64 (glibc)');
  assert.not.match(e.message, 'npm install @flockml');
});

test('the platform package template matches the loader and package.json (name, version, os, cpu, libc)', () => {
  const main = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  const platform = JSON.parse(readFileSync(join(repo, 'packages', 'linux-x64-gnu', 'package.json'), 'utf8'));
  assert.is(platform.name, prebuiltPackage(linux));
  assert.is(platform.version, main.version);
  assert.equal([platform.os, platform.cpu, platform.libc], [['linux'], ['x64'], ['glibc']]);
  // pack:all adds it to the packed package.json only (in the checkout it would break `npm ci`).
  assert.is(main.optionalDependencies, undefined);
  assert.match(readFileSync(join(repo, 'scripts', 'pack_all.ts'), 'utf8'), 'manifest.optionalDependencies = { [template.name]: version }');
  assert.equal(main.binary, { napi_versions: [8] });
  for (const dep of ['cmake-js', 'node-addon-api', 'bindings']) assert.not.ok(main.dependencies[dep], `${dep} is a runtime dependency`);
});

test('this checkout loads its local build (or the FLOCKML_NATIVE one), and says so', async () => {
  const { addonSource } = await import('../lib/native');
  if (process.env.FLOCKML_NATIVE) {
    assert.is(addonSource.kind, 'override');
    assert.is(addonSource.path, resolve(repo, process.env.FLOCKML_NATIVE));
    return;
  }
  assert.is(addonSource.kind, 'local');
  assert.is(addonSource.path, join(repo, 'build', 'Release', 'flockml.node'));
});

test('the source build refuses other platforms with a reason, before doing anything', () => {
  const script = join(repo, 'scripts', 'build_addon.cjs');
  const r = spawnSync(
    process.execPath,
    ['-e', `Object.defineProperty(process, 'platform', { value: 'darwin' }); require(${JSON.stringify(script)})`],
    {
      encoding: 'utf8',
    },
  );
  assert.is(r.status, 1);
  assert.match(r.stderr, 'flockml: flockml builds from source on Linux x64 only (the CPU kernels use x86 intrinsics); this is darwin-x64.');
});

test.run();
