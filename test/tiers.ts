/**
 * Which test files are slow, which start processes, and which must run alone. `npm test` runs
 * every file; `npm run test:quick` (the inner loop, under 2 minutes on 2 cores) leaves out the slow
 * tier and the files that start processes; `npm run test:slow` runs only the slow tier. `.ci/run`
 * runs `npm test`, so CI runs them all.
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

/** Folders whose files start other processes (ranks on loopback, the launcher, the examples). */
export const processFolders: readonly string[] = ['test/dist/', 'test/examples/', 'test/cli/'];

/** Whether `file` belongs to the quick tier. */
export const isQuick = (file: string): boolean => !slowFiles.includes(file) && !processFolders.some((d) => file.startsWith(d));

/**
 * Files that measure the host's responsiveness or wall-clock bounds: they run when no other file
 * is running, so a neighbour's load cannot fail them.
 */
export const exclusiveFiles: readonly string[] = ['test/responsiveness.test.ts', 'test/native/event_loop.test.ts'];
