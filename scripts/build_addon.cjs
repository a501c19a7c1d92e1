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
const { existsSync, readdirSync, rmSync, statSync } = require('node:fs');
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

const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
if (r.status !== 0 || !existsSync(addon)) {
  console.error(`flockml: the native build failed (cmake-js exited ${r.status ?? r.signal})`);
  process.exit(r.status || 1);
}

if (root.split(sep).includes('node_modules')) {
  const build = join(root, 'build');
  for (const name of readdirSync(build)) if (name !== 'Release') rmSync(join(build, name), { recursive: true, force: true });
  for (const name of readdirSync(join(build, 'Release')))
    if (name !== 'flockml.node') rmSync(join(build, 'Release', name), { recursive: true, force: true });
}
const info = require(addon).buildInfo();
const mb = (statSync(addon).size / 2 ** 20).toFixed(1);
console.log(
  `flockml: built build/Release/flockml.node (${mb} MB; CUDA ${info.cuda ? info.cudaVersion : 'not included'}; CPU GEMM ${info.sgemm})`,
);
