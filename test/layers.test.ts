/**
 * The directories of lib/ are layers: each may import (at run time) only from the layers listed for
 * it, so the directory graph has no cycle and a reader can learn lib/ bottom-up. Type-only imports
 * are erased by the compiler; the few that point upwards are listed here by file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import ts from 'typescript';

const LIB = join(__dirname, '..', 'lib');

/**
 * Bottom-up. `core` is lib/*.ts (tensors, dtypes, devices, memory, errors, the addon); `index` is
 * lib/index.ts, the public surface, which may import anything and which nothing imports.
 */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  manifest: ['core'],
  dispatch: ['core', 'manifest'],
  distributed: ['core'],
  ops: ['core', 'manifest', 'dispatch'],
  autograd: ['core', 'dispatch', 'ops'],
  io: ['core', 'dispatch', 'distributed', 'ops'],
  nn: ['core', 'dispatch', 'ops', 'autograd', 'io'],
  optim: ['core', 'dispatch', 'ops', 'autograd'],
  amp: ['core', 'dispatch', 'distributed', 'ops', 'autograd', 'optim'],
  data: ['core', 'distributed', 'ops'],
  text: ['core', 'ops'],
  utils: ['core', 'dispatch', 'ops', 'autograd', 'nn', 'amp'],
  profiler: ['core'],
  models: ['core', 'dispatch', 'ops', 'autograd', 'io', 'nn', 'text'],
  parallel: ['core', 'dispatch', 'distributed', 'ops', 'autograd', 'io', 'nn', 'optim', 'amp'],
  cli: ['core', 'distributed', 'profiler'],
  index: [],
};

/** Type-only imports that point up a layer: `from -> to` by file. */
const TYPE_EXCEPTIONS = new Set(['lib/tensor.ts -> lib/dispatch/record.ts']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : n.endsWith('.ts') ? [p] : [];
  });
}

function layerOf(file: string): string {
  const rel = relative(LIB, file).split('/');
  if (rel.length === 1) return rel[0] === 'index.ts' ? 'index' : 'core';
  return rel[0];
}

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** Every relative import of `file` into lib/, resolved to a file, with whether it is type-only. */
function importsOf(file: string): Edge[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: Edge[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    if (!spec.startsWith('.')) return;
    const base = resolve(dirname(file), spec);
    const target = [base, `${base}.ts`, join(base, 'index.ts')].find((p) => {
      try {
        return statSync(p).isFile();
      } catch {
        return false;
      }
    });
    if (target?.startsWith(`${LIB}/`)) out.push({ from: file, to: target, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const c = node.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : undefined;
      const typeOnly = !!c && (c.isTypeOnly || (!c.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, typeOnly);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      add(node.moduleSpecifier.text, node.isTypeOnly || (!!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0])) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require'))
        add(node.arguments[0].text, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

const edges = files(LIB).flatMap(importsOf);
const name = (f: string) => relative(join(LIB, '..'), f);

test('every directory of lib/ has a layer', () => {
  const unknown = [...new Set(edges.flatMap((e) => [layerOf(e.from), layerOf(e.to)]))].filter((l) => !(l in ALLOWED));
  assert.equal(unknown, [], `add these directories to ALLOWED in test/layers.test.ts: ${unknown.join(', ')}`);
});

test('run-time imports only go down the layers', () => {
  const bad = edges
    .filter((e) => !e.typeOnly)
    .filter((e) => layerOf(e.from) !== layerOf(e.to) && layerOf(e.from) !== 'index' && !ALLOWED[layerOf(e.from)]?.includes(layerOf(e.to)))
    .map((e) => `${name(e.from)} (${layerOf(e.from)}) imports ${name(e.to)} (${layerOf(e.to)})`);
  assert.equal(bad, []);
});

test('type-only imports go down too, but for the listed ones', () => {
  const bad = edges
    .filter((e) => e.typeOnly && layerOf(e.from) !== layerOf(e.to) && layerOf(e.from) !== 'index')
    .filter((e) => !ALLOWED[layerOf(e.from)]?.includes(layerOf(e.to)))
    .map((e) => `${name(e.from)} -> ${name(e.to)}`)
    .filter((e) => !TYPE_EXCEPTIONS.has(e));
  assert.equal(bad, []);
});

test('nothing imports the public surface lib/index.ts', () => {
  const bad = edges.filter((e) => layerOf(e.to) === 'index').map((e) => name(e.from));
  assert.equal(bad, []);
});

test('the layer table itself has no cycle', () => {
  const state = new Map<string, 'open' | 'done'>();
  const cycle: string[] = [];
  const visit = (l: string, path: string[]): boolean => {
    if (state.get(l) === 'done') return false;
    if (state.get(l) === 'open') {
      cycle.push(...path.slice(path.indexOf(l)), l);
      return true;
    }
    state.set(l, 'open');
    for (const d of ALLOWED[l]) if (visit(d, [...path, l])) return true;
    state.set(l, 'done');
    return false;
  };
  for (const l of Object.keys(ALLOWED)) if (visit(l, [])) break;
  assert.equal(cycle, []);
});

test('the check sees imports: lib/ops imports lib/dispatch, and no layer is empty of edges', () => {
  assert.ok(edges.some((e) => layerOf(e.from) === 'ops' && layerOf(e.to) === 'dispatch' && !e.typeOnly));
  assert.ok(edges.length > 500, `${edges.length} imports found`);
});

test.run();
