/** The addon exports exactly what types/decl/ declares (registration is generated from it). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../lib/native';
import { nativeGroups } from '../../types/decl/index';

test('every declared export is on the addon, and nothing else is', () => {
  const declared = nativeGroups.flatMap((g) => g.decls.map((d) => d.name)).sort();
  const actual = Object.keys(native).sort();
  assert.equal(actual, declared);
});

test('the generated exports are functions; the properties are set', () => {
  for (const g of nativeGroups)
    for (const d of g.decls) {
      const v = (native as unknown as Record<string, unknown>)[d.name];
      if (d.kind === 'prop') assert.ok(v !== undefined, d.name);
      else assert.type(v, 'function', d.name);
    }
});

test.run();
