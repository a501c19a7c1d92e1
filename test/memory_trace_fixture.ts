/** Run by memory_trace.test.ts in a child process (FLOCKML_TRACE_ALLOC is read at load): prints one JSON line. */
import * as fl from '../lib/index';

const gc = (globalThis as { gc?: () => void }).gc;
const turn = () => new Promise((resolve) => setImmediate(resolve));

async function main(): Promise<void> {
  const kept = [fl.zeros([256]), fl.zeros([256]), fl.zeros([256])]; // site: kept
  const small = fl.ones([4]); // site: small
  const snapshot = fl.memorySnapshot();

  for (let i = 0; i < 20; i++) fl.randn([64]); // site: leaked
  for (let i = 0; i < 20; i++) fl.randn([64]).dispose(); // site: disposed
  fl.tidy(() => {
    for (let i = 0; i < 20; i++) fl.randn([64]).mul(2); // site: tidied
  });
  for (let i = 0; i < 5 && gc; i++) {
    gc();
    await turn();
  }
  console.log(JSON.stringify({ snapshot, leaks: fl.memoryLeaks(), live: kept.length + small.numel() }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
