/**
 * The gradient tables (lib/ops/grads/): every formula an op looks up with gradOf is registered once
 * the package is loaded, every registered formula is one an op looks up, and each is checked in f64
 * against central differences by at least one conformance case of its op (test/ops/cases/).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import '../../lib/index';
import { manifest } from '../../lib/manifest/index';
import { registeredGrads } from '../../lib/ops/grads/table';
import { cases } from './cases/index';
import { gradcheckFits, wantsGrad } from './harness/check';

const OPS = join(__dirname, '../../lib/ops');

/** The op names lib/ops/ looks up, from the gradOf('name') calls outside the tables themselves. */
function lookedUp(): Map<string, string> {
  const names = new Map<string, string>();
  const walk = (dir: string) => {
    for (const f of readdirSync(dir)) {
      const path = join(dir, f);
      if (statSync(path).isDirectory()) {
        if (f !== 'grads') walk(path);
      } else if (f.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/gradOf\('(\w+)'\)/g)) names.set(m[1], path);
      }
    }
  };
  walk(OPS);
  return names;
}

const used = lookedUp();
const registered = new Set(registeredGrads());

test('the ops look up formulas by name, and every one is registered', () => {
  assert.ok(used.size >= 40, `only ${used.size} gradOf lookups found`);
  const missing = [...used].filter(([name]) => !registered.has(name)).map(([name, file]) => `${name} (${file})`);
  assert.equal(missing, [], `looked up but not registered: ${missing.join(', ')}`);
});

test('every registered formula is looked up by an op', () => {
  const unused = [...registered].filter((name) => !used.has(name));
  assert.equal(unused, [], `registered but never looked up: ${unused.join(', ')}`);
});

test('every registered formula is gradient-checked in f64 by a conformance case of its op', () => {
  const decls = new Map(manifest.map((d) => [d.name, d]));
  const checked = new Set(
    cases
      .filter((c) => {
        const decl = decls.get(c.op);
        return decl !== undefined && wantsGrad(c, decl) && gradcheckFits(c);
      })
      .map((c) => c.op),
  );
  const unchecked = [...registered].filter((name) => !checked.has(name));
  assert.equal(unchecked, [], `no f64 gradient check: ${unchecked.join(', ')}`);
});

test.run();
