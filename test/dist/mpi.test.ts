/**
 * Open MPI for real: `mpirun -np 2` starts the DDP worker with no flockml launcher; the ranks read
 * OMPI_COMM_WORLD_*, derive the store token from the job's namespace, and train to the same
 * parameters as `flockml launch` does. Skips, saying why, where mpirun is not installed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, tsNode, tsx } from './harness';

const worker = join(__dirname, 'workers', 'train_resume.ts');
const cli = join(__dirname, '..', '..', 'lib', 'cli', 'main.ts');
const hasMpirun = spawnSync('mpirun', ['--version'], { encoding: 'utf8' }).status === 0;

// The launcher's and the engines' variables must not leak in from the test's own environment.
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|FLOCKML_TOKEN|FLOCKML_ENGINE|SLURM_.*|OMPI_.*|PMI_.*|PMIX_.*)$/.test(k))
      env[k] = v;
  return { ...env, STEPS: '8', ...extra };
}

test('mpirun -np 2 trains a DDP run without the flockml launcher', () => {
  if (!hasMpirun) {
    console.log('  skipped: mpirun not found (apt-get install openmpi-bin)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'flockml-mpi-'));
  try {
    const port = String(freePort());
    const r = spawnSync(
      'mpirun',
      [
        '--allow-run-as-root',
        '--oversubscribe',
        '-np',
        '2',
        '-x',
        'MASTER_PORT',
        '-x',
        'OUT',
        '-x',
        'STEPS',
        tsNode[0],
        ...tsNode.slice(1),
        worker,
      ],
      { encoding: 'utf8', timeout: 90_000, env: cleanEnv({ MASTER_PORT: port, OUT: join(dir, 'mpi') }) },
    );
    const log = r.stdout + r.stderr;
    assert.is(r.status, 0, log);
    assert.match(log, /done engine=openmpi rank=0 world=2 local=0 token=derived/);
    assert.match(log, /done engine=openmpi rank=1 world=2 local=1 token=derived/);
    assert.match(log, /FLOCKML_TOKEN is not set, so the store's token is derived from the openmpi job id/);
    const ref = spawnSync(tsx, [cli, 'launch', '--nproc-per-node', '2', '--master-port', String(freePort()), worker], {
      encoding: 'utf8',
      timeout: 90_000,
      env: cleanEnv({ OUT: join(dir, 'launch') }),
    });
    assert.is(ref.status, 0, ref.stdout + ref.stderr);
    assert.ok(
      readFileSync(join(dir, 'mpi'), 'utf8') === readFileSync(join(dir, 'launch'), 'utf8'),
      'mpirun and flockml launch trained differently',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('mpirun --npernode 1 runs one flockml launch per node, which starts the local ranks', () => {
  if (!hasMpirun) return;
  // Two "nodes" on this host: each launcher is an MPI rank, its node rank; 2 local ranks each.
  const r = spawnSync(
    'mpirun',
    [
      '--allow-run-as-root',
      '--oversubscribe',
      '-np',
      '2',
      '-x',
      'MASTER_PORT',
      '-x',
      'FLOCKML_TOKEN',
      '-x',
      'STEPS',
      tsNode[0],
      ...tsNode.slice(1),
      cli,
      'launch',
      '--nproc-per-node',
      '2',
      worker,
    ],
    { encoding: 'utf8', timeout: 90_000, env: cleanEnv({ MASTER_PORT: String(freePort()), FLOCKML_TOKEN: 'mpi-test' }) },
  );
  const log = r.stdout + r.stderr;
  assert.is(r.status, 0, log);
  for (const rank of [0, 1, 2, 3])
    assert.match(log, new RegExp(`\\[${rank}\\] done engine=torchrun rank=${rank} world=4 local=${rank % 2} token=set`));
});

test.run();
