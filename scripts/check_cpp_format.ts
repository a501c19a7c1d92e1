/**
 * The C++ and CUDA half of `npm run lint`: every hand-written source under cpp/, cuda/ and sim/
 * laid out as .clang-format says, by clang-format 15 (the npm clang-format package, so every
 * machine formats alike). `npm run format:cpp` (`--fix`) rewrites them in place. cpp/generated/
 * is its generator's (npm run gen:ops -- --check holds it in step).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const CLANG_FORMAT = join(ROOT, 'node_modules', '.bin', 'clang-format');
const fix = process.argv.includes('--fix');

const files = execFileSync('git', ['ls-files', '-z', '--', 'cpp', 'cuda', 'sim'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter((f) => /\.(cc|h|cu|cuh|inc)$/.test(f) && !f.startsWith('cpp/generated/'));

const misformatted: string[] = [];
// A few dozen files a call keeps each command line short.
for (let i = 0; i < files.length; i += 40) {
  const batch = files.slice(i, i + 40);
  const r = spawnSync(CLANG_FORMAT, fix ? ['-i', ...batch] : ['--dry-run', '--Werror', ...batch], { cwd: ROOT, encoding: 'utf8' });
  if (r.error) throw r.error;
  if (fix && r.status !== 0) throw new Error(`clang-format -i failed:\n${r.stderr}`);
  for (const m of r.stderr.matchAll(/^(\S+?):\d+:\d+: error:/gm)) if (!misformatted.includes(m[1])) misformatted.push(m[1]);
  if (!fix && r.status !== 0 && misformatted.length === 0) throw new Error(`clang-format failed:\n${r.stderr}`);
}

if (fix) {
  console.log(`clang-format: ${files.length} files formatted`);
} else if (misformatted.length) {
  console.error(`clang-format: ${misformatted.length} of ${files.length} files are not laid out as .clang-format says:`);
  for (const f of misformatted) console.error(`  ${f}`);
  console.error('npm run format:cpp rewrites them.');
  process.exit(1);
} else {
  console.log(`clang-format: ${files.length} files laid out as .clang-format says`);
}
