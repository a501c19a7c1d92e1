/**
 * Which test files are slow, and which must run alone. `npm test` runs every file; `npm run
 * test:quick` leaves out the slow tier (the inner loop, under 2 minutes on 2 cores); `npm run
 * test:slow` runs only it. `.ci/run` runs `npm test`, so CI runs both.
 */

/** Files of the slow tier: packing and installing, type-checking the whole tree, soak and scaling runs. */
export const slowFiles: readonly string[] = [
  'test/package.test.ts', // packs the package, installs it in a fresh project, compiles a consumer (~150 s)
  'test/typecheck.test.ts', // tsc over lib/, test/, bench/ and examples/
  'test/ops/cpu_isa.test.ts', // reruns the kernel suites under every instruction set the CPU has
  'test/dist/shm_hosts.test.ts', // hierarchical groups of up to 6 ranks on simulated hosts
  'test/dist/parameter_server.test.ts', // asynchronous training runs to convergence
  'test/dist/shm.test.ts', // shared-memory collectives over a sweep of sizes and dtypes
  'test/dist/shm_p2p.test.ts',
];

/**
 * Files that measure the host's responsiveness or wall-clock bounds: they run when no other file
 * is running, so a neighbour's load cannot fail them.
 */
export const exclusiveFiles: readonly string[] = ['test/responsiveness.test.ts', 'test/native/event_loop.test.ts'];
