/**
 * The published package's source-build fallback, as a user without the prebuilt gets it: `npm pack`,
 * installed into a fresh project with cmake-js and node-addon-api and install scripts off (the
 * published package has none), then `npx flockml build` (CPU-only here to keep the test short),
 * then a strict TypeScript program with
 * skipLibCheck false compiles against it, a wrong dtype name fails to compile, and the package
 * loads with require() and import().
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const repo = join(__dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'flockml-consumer-'));
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): { status: number; out: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 64 << 20 });
  return { status: r.status ?? 1, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

const consumerProgram = `
import * as fl from 'flockml';

const dt: fl.DType = 'float32';
const model = new fl.nn.Sequential(new fl.nn.Linear(4, 8), new fl.nn.ReLU(), new fl.nn.Linear(8, 2));
const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1 });
const x = fl.randn([16, 4], { dtype: dt });
const y = fl.randint(0, 2, [16]);

async function main(): Promise<void> {
  let last = Infinity;
  for (let step = 0; step < 5; step++) {
    const loss = fl.tidy(() => {
      const l = fl.nn.functional.crossEntropy(model.forward(x), y);
      opt.zeroGrad();
      l.backward();
      opt.step();
      return l;
    });
    last = await loss.item();
    loss.dispose();
  }
  try {
    fl.zeros([2, 3]).matmul(fl.zeros([4, 5]));
  } catch (e) {
    if (e instanceof fl.FlockRangeError) {
      const code: fl.ErrorCode = e.code;
      console.log(JSON.stringify({ last, code }));
    }
  }
}
void main();
`;

const tsconfig = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2023', 'ESNext.Disposable'],
    module: 'commonjs',
    moduleResolution: 'node',
    strict: true,
    skipLibCheck: false,
    noEmit: false,
    outDir: 'out',
    esModuleInterop: true,
    typeRoots: [join(repo, 'node_modules', '@types')],
    types: ['node'],
  },
  files: ['main.ts'],
};

test.after(() => rmSync(dir, { recursive: true, force: true }));

const devVersion = (name: string) => require(join(repo, 'node_modules', name, 'package.json')).version as string;

test('npm pack, install into a fresh project without the prebuilt, `npx flockml build`: it says what it builds and leaves only the addon in build/', () => {
  const pack = run('npm', ['pack', '--pack-destination', dir, '--silent'], repo);
  assert.is(pack.status, 0, pack.out);
  const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  assert.ok(tgz, `npm pack wrote no tarball: ${pack.out}`);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  const buildTools = [`cmake-js@${devVersion('cmake-js')}`, `node-addon-api@${devVersion('node-addon-api')}`];
  const install = run(
    'npm',
    ['install', join(dir, tgz!), ...buildTools, '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
    dir,
  );
  assert.is(install.status, 0, install.out);
  // Without an addon, loading says how to get one.
  const missing = run(process.execPath, ['-e', "try { require('flockml') } catch (e) { console.log(e.code, e.message) }"], dir);
  assert.match(missing.out, /ERR_NOT_FOUND[\s\S]*npx flockml build/);
  const build = run(join(dir, 'node_modules', '.bin', 'flockml'), ['build'], dir, { FLOCKML_CUDA: 'OFF' });
  assert.is(build.status, 0, build.out);
  assert.match(build.out, /flockml: building the native addon for CPU only \(FLOCKML_CUDA=OFF\)/);
  assert.match(build.out, /flockml: built build\/Release\/flockml\.node/);
  const out = join(dir, 'node_modules', 'flockml', 'build');
  assert.equal(readdirSync(out), ['Release']);
  assert.equal(readdirSync(join(out, 'Release')), ['flockml.node']);
});

test('a strict program compiles against the installed types with skipLibCheck false, and runs', () => {
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  writeFileSync(join(dir, 'main.ts'), consumerProgram);
  const c = run(process.execPath, [tsc, '-p', '.'], dir);
  assert.is(c.status, 0, c.out);
  const r = run(process.execPath, [join('out', 'main.js')], dir);
  assert.is(r.status, 0, r.out);
  const result = JSON.parse(r.out.trim().split('\n').pop()!) as { last: number; code: string };
  assert.ok(Number.isFinite(result.last), r.out);
  assert.is(result.code, 'ERR_SHAPE');
});

test('a wrong dtype name fails to compile', () => {
  writeFileSync(join(dir, 'main.ts'), `import * as fl from 'flockml';\nfl.zeros([2], { dtype: 'float33' });\n`);
  const c = run(process.execPath, [tsc, '-p', '.'], dir);
  assert.is.not(c.status, 0);
  assert.match(c.out, /main\.ts\(2,\d+\): error TS(2322|2820): Type '"float33"' is not assignable/);
});

test('the package loads with require() and import()', () => {
  const cjs = run(process.execPath, ['-e', "const fl = require('flockml'); console.log(fl.ones([3]).sum().itemSync())"], dir);
  assert.is(cjs.status, 0, cjs.out);
  assert.is(cjs.out.trim(), '3');
  const esm = run(
    process.execPath,
    ['--input-type=module', '-e', "import * as fl from 'flockml'; console.log(fl.default ? 'default' : 'named', fl.zeros([2]).dtype)"],
    dir,
  );
  assert.is(esm.status, 0, esm.out);
  assert.match(esm.out, /f32/);
});

test.run();
