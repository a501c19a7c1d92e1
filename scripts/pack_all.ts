/**
 * Writes the two packages a release publishes into packages/out/:
 *   flockml-<v>.tgz                 the TypeScript library (compiled), the sources for a fallback build,
 *                                   and optionalDependencies: { "@flockml/linux-x64-gnu": "<v>" }
 *   flockml-linux-x64-gnu-<v>.tgz   the prebuilt addon (stripped), from packages/linux-x64-gnu's template
 * and checks the platform tarball holds an addon that loads, printing its CUDA version and the
 * newest glibc/libstdc++ symbol versions it needs (objdump -T).
 *
 *   tsx scripts/pack_all.ts            reuse build/Release/flockml.node (what `npm install` built; CI)
 *   tsx scripts/pack_all.ts --clean    a release: clone HEAD into a temporary folder and build there
 *                                      with FLOCKML_CUDA=ON FLOCKML_WERROR=1 (the checkout's build/ is untouched)
 * Ends with one JSON line describing the two tarballs.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const repo = join(__dirname, '..');
const out = join(repo, 'packages', 'out');
const clean = process.argv.includes('--clean');
const unknown = process.argv.slice(2).filter((a) => a !== '--clean');
if (unknown.length) die(`unknown argument ${unknown[0]} (the only option is --clean)`);

function die(msg: string): never {
  console.error(`pack:all: ${msg}`);
  process.exit(1);
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 256 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) die(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}\n${r.stdout ?? ''}`);
  return r.stdout;
}

const temps: string[] = [];
function temp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}
process.on('exit', () => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

let root = repo;
if (clean) {
  root = join(temp('flockml-release-'), 'flockml');
  console.error(`pack:all: clean build of HEAD in ${root}`);
  run('git', ['clone', '-q', repo, root], repo);
  run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], root);
  run(process.execPath, [join(root, 'scripts', 'build_addon.cjs')], root, { FLOCKML_CUDA: 'ON', FLOCKML_WERROR: '1' });
}
const addon = join(root, 'build', 'Release', 'flockml.node');
if (!existsSync(addon)) die(`no addon at ${addon}: run \`npm install\` (or \`npm run build\`) first, or pack:all --clean`);

const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const templateDir = join(root, 'packages', 'linux-x64-gnu');
const template = JSON.parse(readFileSync(join(templateDir, 'package.json'), 'utf8')) as { name: string; version: string };
if (template.version !== version)
  die(`packages/linux-x64-gnu/package.json is version ${template.version}, flockml is ${version}: make them equal`);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The main package: dist/ compiled fresh; --ignore-scripts so `prepare` does not run again. Its
// package.json gains the platform package as an optional dependency at the same version here, not
// in the checkout: there it would make `npm ci` fail until the platform package is published, and
// would let an install from the registry shadow the contributor's own build.
run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')], root);
const mainTgz = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', out], root).trim().split('\n').pop() as string;
const mainStage = temp('flockml-main-');
run('tar', ['xzf', join(out, mainTgz), '-C', mainStage], mainStage);
const mainJson = join(mainStage, 'package', 'package.json');
const manifest = JSON.parse(readFileSync(mainJson, 'utf8')) as Record<string, unknown>;
manifest.optionalDependencies = { [template.name]: version };
// The published package runs nothing at install time: npm 11's allowScripts, pnpm and
// --strict-allow-scripts have nothing to refuse. dist/ ships compiled (`prepare` is tsc, for a
// checkout), the addon comes from the platform package, and where none fits `npx flockml build`
// compiles one (scripts/install.cjs stays for a checkout's `npm install`).
const scripts = manifest.scripts as Record<string, string>;
for (const k of ['preinstall', 'install', 'postinstall', 'prepare']) delete scripts[k];
writeFileSync(mainJson, `${JSON.stringify(manifest, null, 2)}\n`);
run('tar', ['czf', join(out, mainTgz), '--owner=0', '--group=0', '--numeric-owner', '--sort=name', '-C', mainStage, 'package'], mainStage);

// The platform package: template + stripped addon + LICENSE (symbols are not needed to load or to
// read a stack trace's library name; stripping saves ~7 MB of 43).
const stage = temp('flockml-platform-');
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(template, null, 2)}\n`);
copyFileSync(join(templateDir, 'README.md'), join(stage, 'README.md'));
copyFileSync(join(root, 'LICENSE'), join(stage, 'LICENSE'));
copyFileSync(addon, join(stage, 'flockml.node'));
if (spawnSync('strip', ['--version']).status === 0) run('strip', ['--strip-unneeded', join(stage, 'flockml.node')], stage);
const platformTgz = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', out], stage)
  .trim()
  .split('\n')
  .pop() as string;

// Check: the addon in the tarball loads in a fresh process and reports its build.
const unpacked = temp('flockml-check-');
run('tar', ['xzf', join(out, platformTgz), '-C', unpacked], unpacked);
const node = join(unpacked, 'package', 'flockml.node');
const infoText = run(process.execPath, ['-e', `console.log(JSON.stringify(require(${JSON.stringify(node)}).buildInfo()))`], unpacked);
const info = JSON.parse(infoText) as { cuda: boolean; cudaVersion?: string; sgemm: string };
if (clean && !info.cuda) die('a release addon must include CUDA, but this one was built without it');
const contents = readdirSync(join(unpacked, 'package')).sort();
for (const f of ['LICENSE', 'flockml.node', 'package.json']) if (!contents.includes(f)) die(`${platformTgz} lacks ${f}`);

// The newest symbol versions the addon needs: the oldest glibc and libstdc++ it runs on.
function newest(prefix: string): string | null {
  const r = spawnSync('objdump', ['-T', node], { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) return null;
  const versions = [...new Set(r.stdout.match(new RegExp(`${prefix}_[0-9.]+`, 'g')) ?? [])].map((v) => v.slice(prefix.length + 1));
  const key = (v: string) => v.split('.').map(Number);
  versions.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
    return 0;
  });
  return versions.pop() ?? null;
}

const size = (f: string) => statSync(join(out, f)).size;
console.log(
  JSON.stringify({
    out,
    main: { file: mainTgz, bytes: size(mainTgz) },
    platform: { file: platformTgz, name: template.name, bytes: size(platformTgz), addonBytes: statSync(node).size },
    addon: {
      loads: true,
      cuda: info.cuda ? info.cudaVersion : false,
      sgemm: info.sgemm,
      glibc: newest('GLIBC'),
      glibcxx: newest('GLIBCXX'),
    },
  }),
);
