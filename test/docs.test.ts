/**
 * The docs name real things: every repository path they mention exists (a `<placeholder>` or `*`
 * stands for any name), every relative link resolves, every `npm run X` is a script, and every code
 * name in backticks (`gradOf`, `FLOCK_DECLARE_KERNEL`, `native.binary`) occurs in the sources.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = join(__dirname, '..');
const DOCS = [...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`), 'README.md', 'sim/README.md'].filter((f) => f.endsWith('.md'));
const TOP = ['lib', 'cpp', 'cuda', 'sim', 'test', 'types', 'scripts', 'bench', 'examples', 'deploy', 'docs', 'packages', '.ci'];
const SOURCE_DIRS = ['lib', 'cpp', 'cuda', 'sim', 'scripts', 'types', 'test', 'bench', 'examples', 'deploy', '.ci', 'packages'];
/** Outputs the docs describe (built by the commands they name), not files of the repository. */
const OUTPUTS = ['packages/out/', 'build/', 'build-sim/', 'dist/'];
/**
 * Names of other projects' APIs the docs compare flockml with (PyTorch, TensorFlow, CUDA), and the
 * device tool's folder variable: they are not expected in flockml's sources.
 */
const EXTERNAL = new Set(['init_device_mesh', 'MultiWorkerMirroredStrategy', '__activemask', '$OUT']);

function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((n) => {
    if (n === 'node_modules') return [];
    const p = `${dir}/${n}`;
    return statSync(join(ROOT, p)).isDirectory() ? walk(p) : [p];
  });
}

const files = SOURCE_DIRS.filter((d) => existsSync(join(ROOT, d))).flatMap(walk);
const fileSet = new Set([...files, 'CMakeLists.txt', 'package.json', 'biome.json', 'knip.json', 'tsconfig.json', 'LICENSE', 'README.md']);
const dirSet = new Set(
  files.flatMap((f) =>
    f
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
  ),
);
const corpus = [...files.filter((f) => /\.(ts|cjs|cc|h|cu|cuh|inc|py|sh|txt|json|yaml)$/.test(f)), 'CMakeLists.txt', 'package.json']
  .map((f) => readFileSync(join(ROOT, f), 'utf8'))
  .join('\n');
const basenames = new Set(files.map((f) => f.split('/').pop() as string));
const scripts = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts);

/** A path pattern as a regular expression: `<x>` and `*` match one name, `{a,b}` either. */
function pathPattern(p: string): RegExp {
  const esc = p
    .replace(/[.+?^$()|[\]\\]/g, '\\$&')
    .replace(/<[^>]+>/g, '[^/]+')
    .replace(/\*/g, '[^/]*')
    .replace(/\{([^}]+)\}/g, (_, alts: string) => `(${alts.split(',').join('|')})`);
  return new RegExp(`^${esc}/?$`);
}

function pathExists(p: string): boolean {
  if (OUTPUTS.some((o) => p.startsWith(o))) return true;
  const clean = p.replace(/\/$/, '').replace(/:\d+(-\d+)?$/, '');
  if (fileSet.has(clean) || dirSet.has(clean)) return true;
  if (!/[<*{]/.test(clean)) return existsSync(join(ROOT, clean));
  const re = pathPattern(clean);
  return [...fileSet, ...dirSet].some((f) => re.test(f));
}

interface Mention {
  doc: string;
  text: string;
}

function mentions(doc: string): { paths: Mention[]; links: Mention[]; names: Mention[]; npm: Mention[] } {
  const src = readFileSync(join(ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, (block) => (block.startsWith('```\n') ? block : ''));
  const paths: Mention[] = [];
  const names: Mention[] = [];
  const npm: Mention[] = [];
  const links: Mention[] = [];
  const topRe = new RegExp(`(?<![\\w./-])((?:${TOP.map((t) => t.replace('.', '\\.')).join('|')})/[\\w.<>{}*,/-]*[\\w>}*/])`, 'g');
  for (const m of src.matchAll(topRe)) paths.push({ doc, text: m[1] });
  for (const m of src.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) if (!/^[a-z]+:/.test(m[1])) links.push({ doc, text: m[1] });
  for (const m of src.matchAll(/npm run ([\w:-]*\w)\b(?!:)/g)) npm.push({ doc, text: m[1] });
  for (const m of src.matchAll(/`([^`\n]+)`/g)) {
    const code = m[1].trim();
    // A code name: Foo, foo_bar, ns::name, fl.tril, t.logcumsumexp(), FLOCK_X(...).
    const name = /^(?:[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)(?:\(.*\))?$/.exec(code);
    if (!name) continue;
    const last = code
      .replace(/\(.*\)$/, '')
      .split(/\.|::/)
      .pop() as string;
    if (last.length < 4 || !/[A-Z_]|[a-z][A-Z]/.test(last)) continue; // plain words are prose, not names
    names.push({ doc, text: last });
  }
  return { paths, links, names, npm };
}

const all = DOCS.map(mentions);

test('every repository path the docs mention exists', () => {
  const bad = all.flatMap((m) => m.paths).filter((p) => !pathExists(p.text));
  assert.equal(
    bad.map((b) => `${b.doc}: ${b.text}`),
    [],
  );
});

test('every relative link resolves', () => {
  const bad = all.flatMap((m) => m.links).filter((l) => !existsSync(join(ROOT, dirname(l.doc), l.text)));
  assert.equal(
    bad.map((b) => `${b.doc}: ${b.text}`),
    [],
  );
});

test('every npm script the docs name exists', () => {
  const bad = all.flatMap((m) => m.npm).filter((n) => !scripts.includes(n.text));
  assert.equal(
    bad.map((b) => `${b.doc}: npm run ${b.text}`),
    [],
  );
});

test('every code name in backticks occurs in the sources', () => {
  const seen = new Map<string, boolean>();
  const bad = all
    .flatMap((m) => m.names)
    .filter((n) => {
      if (EXTERNAL.has(n.text) || basenames.has(n.text)) return false;
      if (!seen.has(n.text)) seen.set(n.text, new RegExp(`\\b${n.text.replace(/\$/g, '\\$')}\\b`).test(corpus));
      return !seen.get(n.text);
    });
  assert.equal(
    bad.map((b) => `${b.doc}: ${b.text}`),
    [],
  );
});

test('the check finds what it looks for', () => {
  const arch = mentions('docs/ARCHITECTURE.md');
  assert.ok(arch.paths.length > 40, `${arch.paths.length} paths`);
  assert.ok(arch.names.length > 5, `${arch.names.length} names`);
  assert.ok(pathExists('cpp/generated/kernels_<family>.h'));
  assert.not.ok(pathExists('cpp/ops/no_such_file.cc'));
  assert.not.ok(pathExists('lib/ops/launch.ts'));
  assert.ok(relative(ROOT, join(ROOT, 'docs')) === 'docs');
});

test.run();
