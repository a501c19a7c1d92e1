#!/usr/bin/env node
/**
 * The package's install step: builds build/Release/flockml.node with cmake-js and says what it
 * builds (CPU only, or CPU and CUDA with the nvcc it found). Plain JavaScript, because it runs in a
 * consumer's `npm install`, where the TypeScript toolchain is not installed.
 *
 * In an installed copy (inside node_modules) it then removes everything under build/ but the
 * addon: CMake's object files and caches are ~20 MB that nothing reads again. A checkout keeps
 * them, so rebuilding after a change is incremental.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { delimiter, join, resolve, sep } = require('node:path');

const root = resolve(__dirname, '..');
const addon = join(root, 'build', 'Release', 'flockml.node');

function findNvcc() {
  if (process.env.CUDACXX && existsSync(process.env.CUDACXX)) return process.env.CUDACXX;
  const dirs = (process.env.PATH || '').split(delimiter).concat(['/usr/local/bin', '/usr/local/cuda/bin']);
  for (const d of dirs) {
    const p = join(d, 'nvcc');
    if (d && existsSync(p)) return p;
  }
  return null;
}

const mode = (process.env.FLOCKML_CUDA || 'AUTO').toUpperCase();
if (!['AUTO', 'ON', 'OFF'].includes(mode)) {
  console.error(`flockml: FLOCKML_CUDA must be ON, OFF or AUTO, got '${process.env.FLOCKML_CUDA}'`);
  process.exit(1);
}
const nvcc = mode === 'OFF' ? null : findNvcc();
if (mode === 'ON' && !nvcc) {
  console.error('flockml: FLOCKML_CUDA=ON but no nvcc was found (set CUDACXX or put nvcc on PATH)');
  process.exit(1);
}
const why = mode === 'OFF' ? ' (FLOCKML_CUDA=OFF)' : nvcc ? '' : ' (no nvcc found; set FLOCKML_CUDA=ON to require CUDA)';
console.log(`flockml: building the native addon for CPU${nvcc ? ` and CUDA (sm_80, sm_90; ${nvcc})` : ` only${why}`}`);

// CMake reads FLOCKML_CUDA when it configures, and `cmake-js compile` configures only a fresh build
// folder: a mode other than the one the folder was configured with drops the cache, so the build
// follows the variable (the object files stay, so unchanged sources are not compiled again).
const modeFile = join(root, 'build', 'flockml-cuda-mode');
const cache = join(root, 'build', 'CMakeCache.txt');
if (existsSync(cache) && (!existsSync(modeFile) || readFileSync(modeFile, 'utf8').trim() !== mode)) rmSync(cache, { force: true });

const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
if (r.status !== 0 || !existsSync(addon)) {
  console.error(`flockml: the native build failed (cmake-js exited ${r.status ?? r.signal})`);
  process.exit(r.status || 1);
}

writeFileSync(modeFile, `${mode}\n`);
if (root.split(sep).includes('node_modules')) {
  const build = join(root, 'build');
  for (const name of readdirSync(build)) if (name !== 'Release') rmSync(join(build, name), { recursive: true, force: true });
  for (const name of readdirSync(join(build, 'Release')))
    if (name !== 'flockml.node') rmSync(join(build, 'Release', name), { recursive: true, force: true });
}
const info = require(addon).buildInfo();
if ((mode === 'ON' && !info.cuda) || (mode === 'OFF' && info.cuda)) {
  console.error(`flockml: FLOCKML_CUDA=${mode} but the addon was built ${info.cuda ? 'with' : 'without'} CUDA`);
  process.exit(1);
}
const mb = (statSync(addon).size / 2 ** 20).toFixed(1);
console.log(
  `flockml: built build/Release/flockml.node (${mb} MB; CUDA ${info.cuda ? info.cudaVersion : 'not included'}; CPU GEMM ${info.sgemm})`,
);
