/**
 * Saves a 32 MB tensor to <path> over and over; the test kills this process with SIGKILL while a
 * save's temporary file exists.
 *   dead_writer.ts <path>
 */
import * as fl from '../../../lib';

async function main(): Promise<void> {
  const path = process.argv[2];
  const w = fl.full([8 << 20], 1);
  for (;;) await fl.save({ w }, path);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
