// Drives the addon directly (plain JavaScript, so it runs under valgrind with `node --jitless`):
// a local NCCL clique on cuda:0 and cuda:1 whose last owner is the watcher thread of cuda:0's group.
// cuda:0 posts an allReduce that cuda:1 never posts; the watcher times it out and fails the clique,
// holding both groups while it aborts them. The fault plan holds that abort until every JS reference
// to the groups is gone, so the watcher's own references are the last: both groups are destroyed on
// that thread, one of them the thread's own. Prints "ok" when the groups went away there.
'use strict';
const native = require(process.env.FLOCKML_NATIVE);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const state = () => JSON.parse(native.cudaSimState());
const streams = () => state().devices.slice(0, 2).map((d) => d.liveStreams);
async function until(what, ok, ms) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${native.cudaSimState()}`);
    await sleep(20);
  }
}

// Kept out of main's frame: an async function keeps its temporaries (a loop variable, an argument
// just passed) alive across its awaits, and this test needs the groups unreachable.
function post(groups, t) {
  for (const g of groups) native.pgSetTimeout(g, 300);
  return native.pgAllReduce(groups[0], t, 'sum').then(
    () => null,
    (e) => e,
  );
}
let collected = 0;
const registry = new FinalizationRegistry(() => collected++);

async function main() {
  let made = native.ncclInitAll([0, 1], 60_000);
  await made.ready;
  const t = native.fromBuffer(new Float32Array(4).fill(1), [4], 'f32', 'cuda:0');
  const before = streams();

  native.cudaSimFail('ncclCommAbort:1:hold');
  const work = post(made.groups, t);
  await until('the watcher to time the allReduce out and abort', () => state().held.length === 1, 60_000);

  // The watcher is inside the first abort, holding both groups: drop every JS reference to them.
  made.groups.forEach((g) => registry.register(g, null)); // (a loop variable would stay alive in this frame)
  made = null;
  for (let i = 0; i < 100 && collected < 2; i++) {
    global.gc();
    await sleep(10);
  }
  if (collected < 2) throw new Error(`${2 - collected} group handle(s) not collected`);
  await sleep(100); // the handles' native finalizers run on a later turn
  if (String(streams()) !== String(before)) throw new Error(`a group was destroyed before the watcher let go: ${streams()} vs ${before}`);

  native.cudaSimFail(''); // release the abort
  await until('the groups to be destroyed on the watcher thread', () => streams().every((n, d) => n === before[d] - 1), 60_000);
  const e = await work;
  if (!e || e.code !== 'ERR_TIMEOUT') throw new Error(`the allReduce should fail with ERR_TIMEOUT, got ${e && e.code}: ${e && e.message}`);
  native.dispose(t);
  await sleep(200); // give a watcher that outlived its group the chance to touch it
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
