/** The test files themselves: every test is registered before its file's test.run(), which runs only those before it. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

test('no test file registers a test after its test.run() (such a test would never run)', () => {
  const files = testFiles(__dirname);
  assert.ok(files.length > 100, `found ${files.length} test files`);
  const late: string[] = [];
  for (const f of files) {
    const lines = readFileSync(f, 'utf8').split('\n');
    const run = lines.findIndex((l) => /^test\.run\(\);/.test(l));
    if (run < 0) continue;
    lines.forEach((l, i) => {
      if (i > run && /^\s*test(\.\w+)?\(/.test(l)) late.push(`${f.slice(__dirname.length + 1)}:${i + 1}`);
    });
  }
  assert.equal(late, []);
});

test.run();
