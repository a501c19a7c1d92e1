/** Engine adapters: each engine's variables → rank, world, master, token; precedence; coded errors. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { detectEngine, expandHostList, expandTasksPerNode, readEnv, readNodeEnv } from '../../lib/distributed/env';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  assert.unreachable('expected a throw');
  return undefined;
}

test('Slurm host lists expand, keeping zero padding', () => {
  assert.equal(expandHostList('node[01-03,07]'), ['node01', 'node02', 'node03', 'node07']);
  assert.equal(expandHostList('gpu5'), ['gpu5']);
  assert.equal(expandHostList('a[1-2],b,c[09-10]'), ['a1', 'a2', 'b', 'c09', 'c10']);
  assert.equal(expandHostList('r[1-2]n[1-2]'), ['r1n1', 'r1n2', 'r2n1', 'r2n2']);
  assert.equal(expandHostList('x-[008-009].cluster'), ['x-008.cluster', 'x-009.cluster']);
  for (const bad of ['node[01-03', 'node]1[', 'node[a-b]', 'node[5-3]'])
    assert.is(
      code(() => expandHostList(bad)),
      'ERR_ARG',
      bad,
    );
  assert.equal(expandTasksPerNode('2(x3),1'), [2, 2, 2, 1]);
  assert.is(
    code(() => expandTasksPerNode('2(3)')),
    'ERR_ARG',
  );
});

test('torchrun / flockml launch variables', () => {
  const e = readEnv({
    RANK: '3',
    WORLD_SIZE: '4',
    LOCAL_RANK: '1',
    LOCAL_WORLD_SIZE: '2',
    MASTER_ADDR: 'h0',
    MASTER_PORT: '1234',
    FLOCKML_TOKEN: 't',
  });
  assert.equal(
    { ...e, warnings: e.warnings.length },
    {
      rank: 3,
      worldSize: 4,
      localRank: 1,
      localWorldSize: 2,
      masterAddr: 'h0',
      masterPort: 1234,
      token: 't',
      engine: 'torchrun',
      tokenSource: 'set',
      warnings: 0,
    },
  );
  // MASTER_PORT defaults to 29500; a single-host world defaults to loopback.
  const d = readEnv({ RANK: '0', WORLD_SIZE: '2' });
  assert.is(d.masterPort, 29500);
  assert.is(d.masterAddr, '127.0.0.1');
  assert.is(d.tokenSource, 'none');
});

test('Slurm: ranks, local placement, first host of the node list as master, derived token with a warning', () => {
  const env = {
    SLURM_PROCID: '5',
    SLURM_NTASKS: '6',
    SLURM_LOCALID: '1',
    SLURM_NODEID: '2',
    SLURM_TASKS_PER_NODE: '2(x3)',
    SLURM_JOB_NODELIST: 'gpu[07-09]',
    SLURM_JOB_ID: '4242',
  };
  const e = readEnv(env);
  assert.is(e.engine, 'slurm');
  assert.equal([e.rank, e.worldSize, e.localRank, e.localWorldSize, e.masterAddr, e.masterPort], [5, 6, 1, 2, 'gpu07', 29500]);
  assert.is(e.tokenSource, 'derived');
  assert.match(e.warnings.join(), /FLOCKML_TOKEN is not set.*slurm job id/);
  assert.is(readEnv({ ...env, SLURM_PROCID: '0' }).token, e.token, 'every rank derives the same token');
  assert.is.not(readEnv({ ...env, SLURM_JOB_ID: '4243' }).token, e.token);
  const set = readEnv({ ...env, FLOCKML_TOKEN: 'secret', MASTER_ADDR: '10.0.0.9', MASTER_PORT: '4000' });
  assert.equal([set.token, set.tokenSource, set.masterAddr, set.masterPort, set.warnings.length], ['secret', 'set', '10.0.0.9', 4000, 0]);
  // The step's own list and count win over the job's (srun -n 2 inside a bigger allocation).
  const step = readEnv({
    ...env,
    SLURM_PROCID: '1',
    SLURM_STEP_NUM_TASKS: '2',
    SLURM_STEP_NODELIST: 'gpu08',
    SLURM_STEP_TASKS_PER_NODE: '2',
    SLURM_NODEID: '0',
  });
  assert.equal([step.worldSize, step.masterAddr, step.localWorldSize], [2, 'gpu08', 2]);
});

test('Open MPI and MPICH/PMI', () => {
  const o = readEnv({
    OMPI_COMM_WORLD_RANK: '1',
    OMPI_COMM_WORLD_SIZE: '2',
    OMPI_COMM_WORLD_LOCAL_RANK: '1',
    OMPI_COMM_WORLD_LOCAL_SIZE: '2',
    PMIX_NAMESPACE: '77',
  });
  assert.equal([o.engine, o.rank, o.worldSize, o.localRank, o.masterAddr, o.tokenSource], ['openmpi', 1, 2, 1, '127.0.0.1', 'derived']);
  const m = readEnv({ PMI_RANK: '2', PMI_SIZE: '4', MPI_LOCALRANKID: '0', MPI_LOCALNRANKS: '2', MASTER_ADDR: 'n0', FLOCKML_TOKEN: 'k' });
  assert.equal([m.engine, m.rank, m.worldSize, m.localRank, m.localWorldSize, m.masterAddr], ['mpich', 2, 4, 0, 2, 'n0']);
  // Across hosts MPI does not say where rank 0 is: an error naming MASTER_ADDR, not a guess.
  const e = (() => {
    try {
      readEnv({ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_RANK: '0', OMPI_COMM_WORLD_LOCAL_SIZE: '2' });
    } catch (err) {
      return err as Error & { code: string };
    }
    return undefined;
  })();
  assert.is(e?.code, 'ERR_ARG');
  assert.match(e!.message, /MASTER_ADDR/);
});

test('Kubernetes: PyTorchJob and an Indexed Job with a headless Service', () => {
  const pj = readEnv({
    RANK: '1',
    WORLD_SIZE: '2',
    MASTER_ADDR: 'job-master-0',
    MASTER_PORT: '23456',
    PET_NNODES: '2',
    PET_NODE_RANK: '1',
  });
  assert.equal([pj.engine, pj.rank, pj.masterAddr, pj.masterPort], ['pytorchjob', 1, 'job-master-0', 23456]);
  // nprocPerNode > 1: RANK is the node's, so one process per pod is refused (a launcher is needed).
  assert.is(
    code(() => readEnv({ RANK: '1', WORLD_SIZE: '8', PET_NPROC_PER_NODE: '4', PET_NNODES: '2' })),
    'ERR_ARG',
  );
  const node = readNodeEnv({
    RANK: '1',
    WORLD_SIZE: '8',
    PET_NPROC_PER_NODE: '4',
    PET_NNODES: '2',
    PET_NODE_RANK: '1',
    PET_MASTER_ADDR: 'm',
    PET_MASTER_PORT: '23456',
  });
  assert.equal(
    [node?.engine, node?.nodeRank, node?.nnodes, node?.nprocPerNode, node?.masterAddr, node?.masterPort],
    ['pytorchjob', 1, 2, 4, 'm', 23456],
  );

  const ij = { JOB_COMPLETION_INDEX: '2', FLOCKML_NNODES: '3', HOSTNAME: 'train-2', FLOCKML_SERVICE: 'train', FLOCKML_JOB_ID: 'uid-1' };
  const e = readEnv(ij);
  assert.equal([e.engine, e.rank, e.worldSize, e.masterAddr, e.tokenSource], ['indexed-job', 2, 3, 'train-0.train', 'derived']);
  assert.is(readEnv({ ...ij, FLOCKML_MASTER_ADDR: 'm.ns.svc' }).masterAddr, 'm.ns.svc');
  assert.is(
    code(() => readEnv({ JOB_COMPLETION_INDEX: '0', FLOCKML_NNODES: '2' })),
    'ERR_ARG',
    'no master',
  );
  assert.is(
    code(() => readEnv({ JOB_COMPLETION_INDEX: '0' })),
    'ERR_ARG',
    'no FLOCKML_NNODES',
  );
});

test('precedence: launcher variables, then MPI, then Slurm, then the Indexed Job; FLOCKML_ENGINE forces one', () => {
  const slurm = { SLURM_PROCID: '0', SLURM_NTASKS: '1', SLURM_JOB_NODELIST: 'n1' };
  const ompi = { OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2', OMPI_COMM_WORLD_LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_SIZE: '2' };
  assert.is(detectEngine({ ...slurm, ...ompi }), 'openmpi', 'mpirun inside an allocation');
  assert.is(detectEngine({ ...slurm, ...ompi, RANK: '0', WORLD_SIZE: '1' }), 'torchrun', 'a rank of flockml launch under srun');
  assert.is(detectEngine({ ...slurm, PMI_RANK: '0', PMI_SIZE: '1' }), 'mpich');
  assert.is(detectEngine({ ...slurm, JOB_COMPLETION_INDEX: '0' }), 'slurm');
  assert.is(detectEngine({}), null);
  assert.is(detectEngine({ ...ompi, ...slurm, FLOCKML_ENGINE: 'slurm' }), 'slurm');
  assert.is(
    code(() => detectEngine({ FLOCKML_ENGINE: 'pbs' })),
    'ERR_ARG',
  );
});

test('missing and contradictory variables are coded errors naming the variable', () => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{}, /no launcher environment/],
    [{ RANK: '2', WORLD_SIZE: '2' }, /rank 2 is outside a world of 2/],
    [{ RANK: '0', WORLD_SIZE: '0' }, /world size is 0/],
    [{ RANK: '-1', WORLD_SIZE: '2' }, /RANK=-1 is not a non-negative integer/],
    [{ RANK: '0', WORLD_SIZE: '2', MASTER_PORT: '70000' }, /MASTER_PORT=70000 is not a TCP port/],
    [{ SLURM_PROCID: '0' }, /\(slurm\): environment variable SLURM_NTASKS is not set/],
    [{ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_LOCALID: '3', SLURM_NTASKS_PER_NODE: '2' }, /local rank 3 of 2/],
    [{ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'n[1-' }, /host list/],
    [{ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '2' }, /OMPI_COMM_WORLD_LOCAL_RANK is not set/],
    [{ PMI_RANK: '3', PMI_SIZE: '2' }, /rank 3 is outside a world of 2/],
  ];
  for (const [env, message] of cases) {
    try {
      readEnv(env);
      assert.unreachable(JSON.stringify(env));
    } catch (e) {
      assert.is((e as { code?: string }).code, 'ERR_ARG', JSON.stringify(env));
      assert.match((e as Error).message, message);
    }
  }
});

test('the launcher takes its node rank and count from the engine', () => {
  const n = readNodeEnv({
    SLURM_PROCID: '1',
    SLURM_NTASKS: '2',
    SLURM_NODEID: '1',
    SLURM_TASKS_PER_NODE: '1(x2)',
    SLURM_JOB_NODELIST: 'n[3-4]',
    SLURM_JOB_ID: '9',
  });
  assert.equal([n?.engine, n?.nodeRank, n?.nnodes, n?.masterAddr, n?.tokenSource], ['slurm', 1, 2, 'n3', 'derived']);
  assert.is(readNodeEnv({}), null);
});

test.run();
