// Runs a progress bar over an async generator and an array; the test runs it piped and under a pseudo-terminal.
import * as fl from '../../lib/index';

async function* batches(): AsyncGenerator<number> {
  for (let i = 0; i < 6; i++) {
    await new Promise((r) => setTimeout(r, 40));
    yield i;
  }
}

async function main(): Promise<void> {
  const bar = fl.utils.progress(batches(), { total: 6, desc: 'train', logIntervalMs: 60, rank0Only: true });
  for await (const i of bar) bar.setPostfix({ loss: 1 / (i + 1) });
  let n = 0;
  for (const v of fl.utils.progress([1, 2, 3], { desc: 'sync' })) n += v;
  process.stdout.write(`sum ${n}\n`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
