/** Every collective of the ring backend on 2, 3 and 4 real processes, against a local reference. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';

for (const n of [2, 3, 4]) {
  test(`ring collectives on ${n} ranks: all dtypes, sizes 0, 1, 7, 1M+3; newGroup subgroups`, async () => {
    expectAllOk(await runRanks('collectives.ts', n).done);
  });
}

// Rendezvous and ring connections by IPv6 literal and by host name, not only by IPv4 address.
for (const addr of ['::1', 'localhost']) {
  test(`ring collectives on 2 ranks meeting at ${addr}`, async () => {
    expectAllOk(await runRanks('collectives.ts', 2, { env: { MASTER_ADDR: addr, SIZES: '0,7,4099' } }).done);
  });
}

test.run();
