/**
 * Per-op timings from the conformance harness's cases: one JSON line per op × dtype × size with
 * the median time per call, after a clone anchor per device and size (see test/ops/harness/perf.ts).
 *   npm run bench -- ops [--sizes 1025,65537] [--runs 15] [--op NAME] [--device cpu|cuda:N]
 */
import { perf } from '../test/ops/harness/perf';

perf().catch((e) => {
  console.error(e);
  process.exit(1);
});
