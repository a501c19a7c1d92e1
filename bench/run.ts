/**
 * Benchmark dispatcher: `npm run bench -- <name> [args]` runs bench/<name>.ts, which prints JSON lines.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const [given, ...rest] = process.argv.slice(2);
// `fashion-mnist` and `fashion_mnist` name the same file.
const name = given?.replace(/-/g, '_');
const available = readdirSync(__dirname)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3));
if (!name || !existsSync(join(__dirname, `${name}.ts`))) {
  console.error(`usage: npm run bench -- <name> [args]; available: ${available.join(', ')}`);
  process.exit(2);
}
const tsx = join(__dirname, '..', 'node_modules', '.bin', 'tsx');
const r = spawnSync(tsx, [join(__dirname, `${name}.ts`), ...rest], { stdio: 'inherit' });
process.exit(r.status ?? 1);
