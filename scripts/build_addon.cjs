#!/usr/bin/env node
/**
 * The source build: build/Release/flockml.node with cmake-js, CPU only or CPU and CUDA (when nvcc is
 * found). Run by `npm install` in a checkout, by `npm run build`, and in an installed copy only when
 * asked (`npx flockml build` in an installed copy) or in a checkout's `npm install` (scripts/install.cjs).
 * Plain JavaScript, because it runs in a consumer's install, where no TypeScript toolchain is.
 *
 * It says what it does on stderr, one line per stage with the expected duration; npm hides an
 * install script's output, so in an installed copy each line also goes to the terminal when there
 * is one. No network: package.json's `binary.napi_versions` makes cmake-js take the Node-API
 * headers from node-api-headers instead of downloading Node's.
 *
 * In an installed copy (inside node_modules) it then removes everything under build/ but the
 * addon: CMake's object files and caches are ~20 MB that nothing reads again. A checkout keeps
 * them, so rebuilding after a change is incremental.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync, writeFileSync } = require('node:fs');
const { availableParallelism } = require('node:os');
const { delimiter, join, resolve, sep } = require('node:path');

const root = resolve(__dirname, '..');
const addon = join(root, 'build', 'Release', 'flockml.node');
const installed = root.split(sep).includes('node_modules');
const started = Date.now();

let tty = -1;
if (installed && !process.stderr.isTTY) {
  try {
    tty = openSync('/dev/tty', 'w');
  } catch {}
}
function say(line) {
  process.stderr.write(`${line}\n`);
  if (tty >= 0) writeSync(tty, `${line}\n`);
}
function fail(line, code = 1) {
  say(`flockml: ${line}`);
  if (tty >= 0) closeSync(tty);
  process.exit(code);
}

function onPath(name) {
  for (const d of (process.env.PATH || '').split(delimiter)) if (d && existsSync(join(d, name))) return join(d, name);
  return null;
}
function findNvcc() {
  if (process.env.CUDACXX && existsSync(process.env.CUDACXX)) return process.env.CUDACXX;
  return onPath('nvcc') || ['/usr/local/bin/nvcc', '/usr/local/cuda/bin/nvcc'].find((p) => existsSync(p)) || null;
}

if (process.platform !== 'linux' || process.arch !== 'x64') {
  fail(`flockml builds from source on Linux x64 only (the CPU kernels use x86 intrinsics); this is ${process.platform}-${process.arch}.`);
}
const mode = (process.env.FLOCKML_CUDA || 'AUTO').toUpperCase();
if (!['AUTO', 'ON', 'OFF'].includes(mode)) fail(`FLOCKML_CUDA must be ON, OFF or AUTO, got '${process.env.FLOCKML_CUDA}'`);
let cmakeJs;
try {
  cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
  require.resolve('node-addon-api', { paths: [root] });
} catch {
  fail(
    'a source build needs cmake-js and node-addon-api, which are not installed with flockml; in your project run\n' +
      '  npm install --save-dev cmake-js@^8 node-addon-api@^8 && npx flockml build',
  );
}
const cxx = process.env.CXX || onPath('g++') || onPath('c++');
if (!onPath('cmake') || !cxx)
  fail(
    `a source build needs cmake (>= 3.18) and a C++17 compiler on PATH; missing: ${[onPath('cmake') ? '' : 'cmake', cxx ? '' : 'g++'].filter(Boolean).join(', ')}`,
  );
const nvcc = mode === 'OFF' ? null : findNvcc();
if (mode === 'ON' && !nvcc) fail('FLOCKML_CUDA=ON but no nvcc was found (set CUDACXX or put nvcc on PATH)');

// Measured CPU time of a full build (issue 40): ~3.5 min for the C++ files, ~5.5 more with CUDA;
// the build runs one compiler per core.
const cores = availableParallelism();
const count = (dir, ext) =>
  existsSync(join(root, dir)) ? readdirSync(join(root, dir), { recursive: true }).filter((f) => String(f).endsWith(ext)).length : 0;
const cppFiles = count('cpp', '.cc');
const cuFiles = nvcc ? count('cuda', '.cu') : 0;
const estimate = Math.max(1, Math.round(((nvcc ? 9 : 3.5) * 60) / Math.min(cores, 8) / 60));
const why = mode === 'OFF' ? ' (FLOCKML_CUDA=OFF)' : nvcc ? '' : ' (no nvcc found; set FLOCKML_CUDA=ON to require CUDA)';
const sim = process.argv.includes('--sim');
if (!sim) say(`flockml: building the native addon for CPU${nvcc ? ` and CUDA (sm_80, sm_90; nvcc found at ${nvcc})` : ` only${why}`}`);

// CMake reads FLOCKML_CUDA when it configures: a mode other than the one the folder was configured
// with drops the cache, so the build follows the variable (the object files stay, so unchanged
// sources are not compiled again).
const modeFile = join(root, 'build', 'flockml-cuda-mode');
const cache = join(root, 'build', 'CMakeCache.txt');
if (existsSync(cache) && (!existsSync(modeFile) || readFileSync(modeFile, 'utf8').trim() !== mode)) rmSync(cache, { force: true });

function stage(n, what, fn) {
  const t = Date.now();
  say(`flockml: [${n}/3] ${what}`);
  fn();
  return ((Date.now() - t) / 1000).toFixed(0);
}
function cmake(args) {
  // In an installed copy CMake's own output goes to stderr only when it fails (npm shows it then).
  const r = spawnSync(process.execPath, [cmakeJs, ...args, '--out', 'build'], {
    cwd: root,
    stdio: installed ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  if (r.status !== 0) {
    if (installed) process.stderr.write(`${r.stdout}${r.stderr}`);
    fail(`the native build failed (cmake-js ${args[0]} exited ${r.status ?? r.signal}); the output above says why`, r.status || 1);
  }
}

// `--sim`: the CUDA simulator's addon (build-sim/sim/flockml.node, sim/README.md) and its unit tests,
// in a folder of their own configured CPU-only, so they never disturb build/ (nor it them); they
// need no CUDA toolkit, only Boost.Context. The tests load it with FLOCKML_NATIVE.
if (sim) {
  const started = Date.now();
  const out = ['--out', 'build-sim'];
  const run = (args) => {
    const r = spawnSync(process.execPath, [cmakeJs, ...args, ...out], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0)
      fail(`the simulator's build failed (cmake-js ${args[0]} exited ${r.status ?? r.signal}); the output above says why`, r.status || 1);
  };
  say("flockml: building the CUDA simulator's addon and its unit tests (cuda/*.cu as C++; a first build takes minutes)");
  if (!existsSync(join(root, 'build-sim', 'CMakeCache.txt'))) run(['configure', '--CDFLOCKML_CUDA=OFF']);
  run(['build', '--target', 'flockml_sim', '--parallel', String(cores)]);
  for (const target of ['sim_engine_test', 'sim_runtime_test', 'sim_nccl_test'])
    run(['build', '--target', target, '--parallel', String(cores)]);
  say(`flockml: built build-sim/sim/flockml.node in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  process.exit(0);
}

if (existsSync(cache)) say('flockml: [1/3] configure: reusing build/CMakeCache.txt');
else stage(1, 'configure (cmake, ~10 s; Node-API headers from node-api-headers, no download)', () => cmake(['configure']));
const secs = stage(
  2,
  `compile ${cppFiles} C++${cuFiles ? ` and ${cuFiles} CUDA` : ''} files on ${cores} cores (a full build takes about ${estimate} min here; an incremental one seconds)`,
  () => cmake(['build', '--parallel', String(cores)]),
);
if (!existsSync(addon)) fail(`the build finished but ${addon} is missing`);

writeFileSync(modeFile, `${mode}\n`);
say(`flockml: [3/3] check the addon loads (compiled in ${secs} s)`);
if (installed) {
  const build = join(root, 'build');
  for (const name of readdirSync(build)) if (name !== 'Release') rmSync(join(build, name), { recursive: true, force: true });
  for (const name of readdirSync(join(build, 'Release')))
    if (name !== 'flockml.node') rmSync(join(build, 'Release', name), { recursive: true, force: true });
}
const info = require(addon).buildInfo();
if ((mode === 'ON' && !info.cuda) || (mode === 'OFF' && info.cuda))
  fail(`FLOCKML_CUDA=${mode} but the addon was built ${info.cuda ? 'with' : 'without'} CUDA`);
const mb = (statSync(addon).size / 2 ** 20).toFixed(1);
say(
  `flockml: built build/Release/flockml.node in ${((Date.now() - started) / 1000).toFixed(0)} s (${mb} MB; CUDA ${info.cuda ? info.cudaVersion : 'not included'}; CPU GEMM ${info.sgemm})`,
);
if (tty >= 0) closeSync(tty);
