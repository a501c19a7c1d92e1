/**
 * lib/ has no runtime import cycle. A cycle makes module evaluation order matter: a class can be
 * undefined when a module that imports it first runs, and code grows work-arounds such as
 * rebuilding tensors through `t.constructor`. Type-only imports and exports vanish at run time,
 * so they may go either way; `import()` inside a function runs after loading and is not an edge.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

const root = join(__dirname, '..');
const lib = join(root, 'lib');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [p] : [];
  });
}

function resolveLocal(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(from), spec);
  for (const cand of [`${base}.ts`, join(base, 'index.ts'), base]) {
    if (cand.endsWith('.ts') && existsSync(cand) && statSync(cand).isFile()) return cand;
  }
  return null; // a .d.ts (types/native) or a JSON file: no runtime module of ours
}

/** The specifiers `file` loads when it is evaluated. */
export function runtimeImports(file: string, source = readFileSync(file, 'utf8')): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const out: string[] = [];
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) {
      const clause = st.importClause;
      if (clause?.isTypeOnly) continue;
      const named = clause?.namedBindings;
      const allTypeOnly =
        clause !== undefined &&
        clause.name === undefined &&
        named !== undefined &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((e) => e.isTypeOnly);
      if (!allTypeOnly) out.push(st.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(st) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
      if (st.isTypeOnly) continue;
      const clause = st.exportClause;
      if (clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly)) continue;
      out.push(st.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(st) && !st.isTypeOnly && ts.isExternalModuleReference(st.moduleReference)) {
      const e = st.moduleReference.expression;
      if (ts.isStringLiteral(e)) out.push(e.text);
    }
  }
  return out;
}

/** Every cycle's smallest representative found by a DFS over the graph, as file paths. */
function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'active' | 'done'>();
  const path: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'active');
    path.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 'active') cycles.push([...path.slice(path.indexOf(m)), m]);
      else if (!state.has(m)) visit(m);
    }
    path.pop();
    state.set(n, 'done');
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

function graphOf(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = runtimeImports(f)
      .map((s) => resolveLocal(f, s))
      .filter((d): d is string => d !== null);
    graph.set(f, [...new Set(deps)]);
  }
  return graph;
}

test('the parser tells runtime imports from type-only ones', () => {
  const src = `
    import type { A } from './a';
    import { type B, type C } from './b';
    import { type D, e } from './d';
    import f from './f';
    import * as g from './g';
    import './h';
    export type { I } from './i';
    export { type J } from './j';
    export { k } from './k';
    export * from './l';
    export * as m from './m';
    import n = require('./n');
    async function later() { await import('./o'); }`;
  assert.equal(runtimeImports('x.ts', src), ['./d', './f', './g', './h', './k', './l', './m', './n']);
});

test('the cycle finder reports a cycle and none in a tree', () => {
  assert.equal(
    findCycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
      ]),
    ),
    [['a', 'b', 'c', 'a']],
  );
  assert.equal(
    findCycles(
      new Map([
        ['a', ['b', 'c']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    [],
  );
});

test('lib/ has no runtime import cycle', () => {
  const files = tsFiles(lib);
  assert.ok(files.length > 20, `found only ${files.length} files under lib/`);
  const cycles = findCycles(graphOf(files));
  const shown = cycles.map((c) => c.map((f) => relative(root, f)).join(' -> '));
  assert.ok(shown.length === 0, `runtime import cycles in lib/:\n  ${shown.join('\n  ')}`);
});

test.run();
