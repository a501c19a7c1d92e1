/**
 * The user's path, as CI runs it after `npm test` (.ci/run):
 *   1. `npm run pack:all` (reuses the addon `npm install` built);
 *   2. in a fresh project, `npm install --ignore-scripts <main.tgz> <platform.tgz>` with a PATH that
 *      holds node and nothing else (no g++, cmake, nvcc: the prebuilt must be what loads), in < 60 s;
 *   3. the README's first examples run with tsx ("A first look"; "Training a model" for 20 batches
 *      when Fashion-MNIST is installed), `flockml info` says the prebuilt was loaded, and a consumer
 *      file type-checks with `tsc --strict`;
 *   4. the main tarball alone, scripts ignored: `require('flockml')` throws ERR_NOT_FOUND saying what
 *      was looked for and how to build, not bindings' list of paths.
 * Prints one line per check and a JSON summary; exits 1 when any check fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

const repo = join(__dirname, '..');
const out = join(repo, 'packages', 'out');
const pkgVersion = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;
const work = mkdtempSync(join(tmpdir(), 'flockml-user-'));
let failures = 0;

function check(ok: boolean, what: string, detail = ''): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) {
    failures++;
    if (detail) console.log(detail.replace(/^/gm, '    '));
  }
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): { status: number; out: string; secs: number } {
  const t = Date.now();
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...env, FORCE_COLOR: '0' }, maxBuffer: 256 << 20, timeout: 15 * 60_000 });
  return { status: r.status ?? 1, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, secs: (Date.now() - t) / 1000 };
}

function project(name: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true }));
  return dir;
}

/** The version of a tool the repository itself uses, so the consumer's install hits npm's cache. */
function devVersion(name: string): string {
  return (JSON.parse(readFileSync(join(repo, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The first ```ts block after `heading` in the README. */
function readmeBlock(heading: string): string {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const from = readme.indexOf(`\n${heading}\n`);
  const m = /```ts\n([\s\S]*?)```/.exec(readme.slice(from));
  if (from < 0 || !m) throw new Error(`README has no ts block under ${heading}`);
  return m[1];
}

try {
  // 1. The two tarballs.
  const pack = run('npm', ['run', '--silent', 'pack:all'], repo);
  check(pack.status === 0, `npm run pack:all (${pack.secs.toFixed(0)} s)`, pack.out);
  if (pack.status !== 0) process.exit(1);
  const packed = JSON.parse(pack.out.trim().split('\n').pop() as string) as {
    main: { file: string; bytes: number };
    platform: { file: string; name: string; bytes: number };
    addon: { cuda: string | false; glibc: string; glibcxx: string };
  };
  const mainTgz = join(out, packed.main.file);
  const packedJson = run('tar', ['xzOf', mainTgz, 'package/package.json'], out);
  const optional = (JSON.parse(packedJson.out) as { optionalDependencies?: Record<string, string> }).optionalDependencies;
  check(
    optional?.[packed.platform.name] === pkgVersion,
    `the main tarball lists ${packed.platform.name}@${pkgVersion} as an optional dependency`,
    packedJson.out,
  );
  const platformTgz = join(out, packed.platform.file);

  // 2. A fresh project: the tools first (from the registry or npm's cache), then flockml, timed,
  // with node alone on PATH. npm itself runs as `node npm-cli.js`.
  const app = project('app');
  const tools = run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      `typescript@${devVersion('typescript')}`,
      `tsx@${devVersion('tsx')}`,
      `@types/node@${devVersion('@types/node')}`,
    ],
    app,
  );
  check(tools.status === 0, `install typescript, tsx, @types/node into a fresh project (${tools.secs.toFixed(0)} s)`, tools.out);
  const bare = join(work, 'bin');
  mkdirSync(bare);
  symlinkSync(process.execPath, join(bare, 'node'));
  const npmBin = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  const npmCli = join(dirname(realpathSync(npmBin)), 'npm-cli.js');
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: bare };
  for (const k of ['CXX', 'CC', 'CUDACXX', 'FLOCKML_BUILD_FROM_SOURCE']) delete env[k];
  const compilers = ['g++', 'c++', 'gcc', 'cc', 'cmake', 'make', 'nvcc'].filter((c) =>
    env.PATH?.split(delimiter).some((d) => existsSync(join(d, c))),
  );
  check(compilers.length === 0, 'no compiler, cmake or nvcc on the install PATH', compilers.join(' '));
  const install = run(
    process.execPath,
    [npmCli, 'install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', mainTgz, platformTgz],
    app,
    env,
  );
  check(install.status === 0, `npm install --ignore-scripts <main.tgz> <platform.tgz> (${install.secs.toFixed(1)} s)`, install.out);
  check(install.secs < 60, `the install took under 60 s (${install.secs.toFixed(1)} s)`);
  const installed = join(app, 'node_modules', 'flockml');
  check(!existsSync(join(installed, 'build')), 'nothing was built (node_modules/flockml has no build/)');
  // Nothing would have run with scripts allowed either: the published manifest has no install-time script.
  const published = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const atInstall = ['preinstall', 'install', 'postinstall', 'prepare'].filter((k) => published.scripts?.[k] !== undefined);
  check(
    atInstall.length === 0,
    'the published package has no install-time script (npm 11 allowScripts and pnpm have nothing to refuse)',
    atInstall.join(' '),
  );
  check(
    existsSync(join(app, 'node_modules', ...packed.platform.name.split('/'), 'flockml.node')),
    `${packed.platform.name} is installed with its addon`,
  );

  // 3. The README's examples, flockml info, a strict type-check.
  const tsx = join(app, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  writeFileSync(join(app, 'first_look.mts'), readmeBlock('## A first look'));
  const first = run(process.execPath, [tsx, 'first_look.mts'], app, env);
  const loss = Number(first.out.trim().split('\n').pop());
  check(first.status === 0 && Number.isFinite(loss), `README "A first look" runs with tsx (loss ${loss})`, first.out);
  const data = process.env.FLOCKML_FASHION_MNIST_DIR || '/usr/share/datasets/fashion-mnist';
  if (existsSync(data)) {
    // Verbatim, but stopped after 20 batches (a full epoch is a minute of CPU that proves nothing more).
    const block = readmeBlock('## Training a model').replace(
      /\n {2}loss\.dispose\(\);\n/,
      '\n  last = await loss.item();\n  loss.dispose();\n  if (++steps === 20) break;\n',
    );
    writeFileSync(join(app, 'train.mts'), `let steps = 0;\nlet last = NaN;\n${block}\nconsole.log(JSON.stringify({ steps, last }));\n`);
    const train = run(process.execPath, [tsx, 'train.mts'], app, env);
    let r: { steps?: number; last?: number } = {};
    try {
      r = JSON.parse(train.out.trim().split('\n').pop() as string);
    } catch {}
    check(
      train.status === 0 && r.steps === 20 && Number.isFinite(r.last),
      `README "Training a model" trains 20 batches (last loss ${r.last})`,
      train.out,
    );
  } else {
    console.log(`skip README "Training a model": no Fashion-MNIST at ${data}`);
  }
  const info = run(process.execPath, [join(installed, 'dist', 'lib', 'cli', 'main.js'), 'info'], app, env);
  let source: { kind?: string; package?: string } = {};
  try {
    source = (JSON.parse(info.out) as { addon: typeof source }).addon;
  } catch {}
  check(info.status === 0 && source.kind === 'prebuilt', `flockml info: addon ${source.kind} ${source.package ?? ''}`, info.out);
  writeFileSync(
    join(app, 'consumer.ts'),
    [
      "import * as fl from 'flockml';",
      "const dt: fl.DType = 'float32';",
      'const model = new fl.nn.Sequential(new fl.nn.Linear(4, 8), new fl.nn.ReLU(), new fl.nn.Linear(8, 2));',
      'const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1 });',
      'export async function step(x: fl.Tensor = fl.randn([16, 4], { dtype: dt })): Promise<number> {',
      '  const loss = fl.nn.functional.crossEntropy(model.forward(x), fl.randint(0, 2, [16]));',
      '  opt.zeroGrad();',
      '  loss.backward();',
      '  opt.step();',
      '  return loss.item();',
      '}',
      '',
    ].join('\n'),
  );
  const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc');
  // --esModuleInterop as `tsc --init` sets it: the shipped summary_writer.d.ts default-imports protobufjs.
  const args = [
    '--strict',
    '--noEmit',
    '--skipLibCheck',
    'false',
    '--target',
    'ES2022',
    '--lib',
    'ES2023,ESNext.Disposable',
    '--module',
    'commonjs',
    '--esModuleInterop',
  ];
  const typed = run(process.execPath, [tsc, ...args, '--moduleResolution', 'node', '--types', 'node', 'consumer.ts'], app, env);
  check(typed.status === 0, 'tsc --strict type-checks a consumer file against the installed types', typed.out);

  // 4. The main tarball alone, scripts ignored: the actionable error.
  const alone = project('alone');
  const i2 = run(
    process.execPath,
    [npmCli, 'install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', mainTgz],
    alone,
    env,
  );
  check(i2.status === 0, `npm install --ignore-scripts <main.tgz> alone (${i2.secs.toFixed(1)} s)`, i2.out);
  const probe = "try { require('flockml'); console.log('loaded') } catch (e) { console.log(e.code); console.log(e.message) }";
  const load = run(process.execPath, ['-e', probe], alone, env);
  const wanted = [
    /^ERR_NOT_FOUND$/m,
    /no native addon could be loaded on linux-x64/,
    /@flockml\/linux-x64-gnu: not installed/,
    /npx flockml build/,
  ];
  check(
    wanted.every((w) => w.test(load.out)) && !/Could not locate the bindings file/.test(load.out),
    'the main tarball alone: require() throws ERR_NOT_FOUND naming what was looked for and how to build',
    load.out,
  );

  console.log(
    JSON.stringify({
      installSeconds: Number(install.secs.toFixed(1)),
      mainTgzBytes: packed.main.bytes,
      platformTgzBytes: packed.platform.bytes,
      addon: packed.addon,
      failures,
    }),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);
