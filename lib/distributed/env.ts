/**
 * Where this process sits in the job, read from whichever engine started it. Each engine has an
 * adapter that turns its variables into the same {@link DistEnv}; the first adapter whose
 * variables are present wins, in this order (FLOCKML_ENGINE names one and skips the detection):
 *
 *   torchrun    RANK, WORLD_SIZE [LOCAL_RANK, LOCAL_WORLD_SIZE]: `flockml launch`, torchrun,
 *               Kubeflow's PyTorchJob (reported as pytorchjob when its PET_* variables are set)
 *   openmpi     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
 *   mpich       PMI_RANK, PMI_SIZE [MPI_LOCALRANKID, MPI_LOCALNRANKS] (Hydra, Intel MPI)
 *   slurm       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, the first host of
 *               SLURM_STEP_NODELIST / SLURM_JOB_NODELIST as the master
 *   indexed-job JOB_COMPLETION_INDEX with FLOCKML_NNODES, and FLOCKML_MASTER_ADDR or the pod
 *               `<job>-0.<FLOCKML_SERVICE>` (Kubernetes Indexed Job + headless Service)
 *
 * The launcher-set ones come first: a process that `flockml launch` started under srun or mpirun
 * also carries the engine's variables, which describe the launcher, not the rank. MPI comes
 * before Slurm because mpirun inside an allocation leaves the batch step's SLURM_PROCID=0 in
 * every rank.
 *
 * Everywhere: MASTER_ADDR and MASTER_PORT (default 29500) override what the engine gives, and the
 * store's shared secret is FLOCKML_TOKEN. Without it, an engine that names its job (Slurm's job
 * id, Open MPI's namespace, FLOCKML_JOB_ID) yields a token derived from that name, with a warning:
 * anyone who can see the job id can join the store.
 */
import { createHash } from 'node:crypto';
import { describe } from '../errors';
import { distError } from './errors';

export type Engine = 'torchrun' | 'pytorchjob' | 'openmpi' | 'mpich' | 'slurm' | 'indexed-job';

const ENGINES: readonly Engine[] = ['torchrun', 'pytorchjob', 'openmpi', 'mpich', 'slurm', 'indexed-job'];

export const DEFAULT_MASTER_PORT = 29500;

export interface DistEnv {
  rank: number;
  localRank: number;
  worldSize: number;
  localWorldSize: number;
  masterAddr: string;
  masterPort: number;
  token: string;
  /** The engine whose variables these came from. */
  engine: Engine;
  /** How the token was obtained: set (FLOCKML_TOKEN), derived (from the job id), or none. */
  tokenSource: 'set' | 'derived' | 'none';
  /** Things the user should know (a derived token, an assumed master). */
  warnings: string[];
}

type Env = NodeJS.ProcessEnv;

const has = (env: Env, name: string) => env[name] !== undefined && env[name] !== '';

function int(env: Env, engine: string, name: string, fallback?: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') {
    if (fallback !== undefined) return fallback;
    throw distError('ERR_ARG', `distributed (${engine}): environment variable ${name} is not set`);
  }
  const v = Number(raw);
  if (!Number.isInteger(v) || v < 0 || raw.trim() !== raw)
    throw distError('ERR_ARG', `distributed (${engine}): ${name}=${raw} is not a non-negative integer`);
  return v;
}

/**
 * Expands a Slurm host list: `node[01-03,07],gpu5` → node01, node02, node03, node07, gpu5.
 * Zero padding is kept; several bracket groups in one name (`r[1-2]n[1-2]`) multiply out.
 */
export function expandHostList(list: string): string[] {
  const out: string[] = [];
  for (const item of splitTopLevel(list)) {
    if (item === '') continue;
    out.push(...expandOne(item, list));
  }
  return out;
}

function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0,
    start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    if (depth < 0) throw badHostList(list, 'unbalanced ]');
    if (c === ',' && depth === 0) {
      parts.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  if (depth !== 0) throw badHostList(list, 'unbalanced [');
  parts.push(list.slice(start).trim());
  return parts;
}

function expandOne(item: string, list: string): string[] {
  const open = item.indexOf('[');
  if (open < 0) return [item];
  const close = item.indexOf(']', open);
  const prefix = item.slice(0, open),
    rest = expandOne(item.slice(close + 1), list);
  const names: string[] = [];
  for (const range of item.slice(open + 1, close).split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(range.trim());
    if (!m) throw badHostList(list, `'${range}' is not a number or a range`);
    const lo = Number(m[1]),
      hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw badHostList(list, `range ${range} runs backwards`);
    if (hi - lo > 100_000) throw badHostList(list, `range ${range} is implausibly large`);
    for (let n = lo; n <= hi; n++) for (const r of rest) names.push(`${prefix}${String(n).padStart(m[1].length, '0')}${r}`);
  }
  return names;
}

function badHostList(list: string, why: string) {
  return distError('ERR_ARG', `distributed (slurm): cannot read the host list '${list}': ${why}`);
}

/** Slurm's tasks-per-node list: `2(x3),1` → [2, 2, 2, 1]. */
export function expandTasksPerNode(spec: string): number[] {
  const out: number[] = [];
  for (const part of spec.split(',')) {
    const m = /^(\d+)(?:\(x(\d+)\))?$/.exec(part.trim());
    if (!m) throw distError('ERR_ARG', `distributed (slurm): cannot read the tasks-per-node list '${spec}'`);
    for (let i = 0; i < Number(m[2] ?? 1); i++) out.push(Number(m[1]));
  }
  return out;
}

interface Placement {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  /** The engine's idea of the master host, when it has one. */
  master?: string;
  /** A name for this job that every rank sees (token derivation). */
  jobId?: string;
  warnings?: string[];
}

type Adapter = (env: Env) => Placement;

const torchrun: Adapter = (env) => {
  const e = 'torchrun';
  const worldSize = int(env, e, 'WORLD_SIZE'),
    rank = int(env, e, 'RANK');
  // PyTorchJob with nprocPerNode > 1 gives each pod the node rank in RANK and every process's
  // count in WORLD_SIZE: one process per pod would be wrong, a launcher in the pod is needed.
  const nproc = int(env, e, 'PET_NPROC_PER_NODE', 1);
  if (nproc > 1 && !has(env, 'FLOCKML_LAUNCHED') && !has(env, 'TORCHELASTIC_RUN_ID'))
    throw distError(
      'ERR_ARG',
      `distributed (pytorchjob): PET_NPROC_PER_NODE=${nproc}, so RANK is the pod's node rank: start the script with ` +
        '`flockml launch` in the pod, which starts one process per local rank',
    );
  return {
    rank,
    worldSize,
    localRank: int(env, e, 'LOCAL_RANK', rank),
    localWorldSize: int(env, e, 'LOCAL_WORLD_SIZE', worldSize),
    jobId: env.TORCHELASTIC_RUN_ID,
  };
};

const openmpi: Adapter = (env) => {
  const e = 'openmpi';
  return {
    rank: int(env, e, 'OMPI_COMM_WORLD_RANK'),
    worldSize: int(env, e, 'OMPI_COMM_WORLD_SIZE'),
    localRank: int(env, e, 'OMPI_COMM_WORLD_LOCAL_RANK'),
    localWorldSize: int(env, e, 'OMPI_COMM_WORLD_LOCAL_SIZE'),
    jobId: env.PMIX_NAMESPACE || env.OMPI_MCA_ess_base_jobid,
  };
};

const mpich: Adapter = (env) => {
  const e = 'mpich';
  const rank = int(env, e, 'PMI_RANK'),
    worldSize = int(env, e, 'PMI_SIZE');
  return {
    rank,
    worldSize,
    localRank: int(env, e, 'MPI_LOCALRANKID', rank),
    localWorldSize: int(env, e, 'MPI_LOCALNRANKS', worldSize),
    jobId: env.PMI_KVSNAME || env.PMIX_NAMESPACE,
  };
};

const slurm: Adapter = (env) => {
  const e = 'slurm';
  const worldSize = int(env, e, has(env, 'SLURM_STEP_NUM_TASKS') ? 'SLURM_STEP_NUM_TASKS' : 'SLURM_NTASKS');
  const nodeId = int(env, e, 'SLURM_NODEID', 0);
  const perNodeSpec = env.SLURM_STEP_TASKS_PER_NODE || env.SLURM_TASKS_PER_NODE;
  const perNode = perNodeSpec ? expandTasksPerNode(perNodeSpec) : undefined;
  const nodes = env.SLURM_STEP_NODELIST || env.SLURM_JOB_NODELIST || env.SLURM_NODELIST;
  return {
    rank: int(env, e, 'SLURM_PROCID'),
    worldSize,
    localRank: int(env, e, 'SLURM_LOCALID', 0),
    localWorldSize: perNode?.[nodeId] ?? int(env, e, 'SLURM_NTASKS_PER_NODE', worldSize),
    master: nodes ? expandHostList(nodes)[0] : undefined,
    jobId: env.SLURM_JOB_ID ? `${env.SLURM_JOB_ID}.${env.SLURM_STEP_ID ?? ''}` : undefined,
  };
};

const indexedJob: Adapter = (env) => {
  const e = 'indexed-job';
  const rank = int(env, e, 'JOB_COMPLETION_INDEX');
  const worldSize = int(env, e, 'FLOCKML_NNODES');
  let master: string | undefined;
  // Pods of an Indexed Job with `subdomain: <service>` are `<job>-<index>.<service>` in DNS.
  const m = /^(.+)-(\d+)$/.exec(env.HOSTNAME ?? '');
  if (has(env, 'FLOCKML_SERVICE') && m && Number(m[2]) === rank) master = `${m[1]}-0.${env.FLOCKML_SERVICE}`;
  return { rank, worldSize, localRank: 0, localWorldSize: 1, master, jobId: env.FLOCKML_JOB_ID };
};

const ADAPTERS: ReadonlyArray<{ engine: Engine; present: (env: Env) => boolean; read: Adapter }> = [
  { engine: 'torchrun', present: (env) => has(env, 'RANK') && has(env, 'WORLD_SIZE'), read: torchrun },
  { engine: 'openmpi', present: (env) => has(env, 'OMPI_COMM_WORLD_RANK'), read: openmpi },
  { engine: 'mpich', present: (env) => has(env, 'PMI_RANK'), read: mpich },
  { engine: 'slurm', present: (env) => has(env, 'SLURM_PROCID'), read: slurm },
  { engine: 'indexed-job', present: (env) => has(env, 'JOB_COMPLETION_INDEX'), read: indexedJob },
];

/** The engine whose variables are in `env` (FLOCKML_ENGINE when set), or null when none is. */
export function detectEngine(env: Env = process.env): Engine | null {
  const forced = env.FLOCKML_ENGINE;
  if (forced) {
    if (!ENGINES.includes(forced as Engine))
      throw distError('ERR_ARG', `distributed: FLOCKML_ENGINE=${forced} is not one of ${ENGINES.join(', ')}`);
    return forced as Engine;
  }
  const a = ADAPTERS.find((x) => x.present(env));
  if (!a) return null;
  if (a.engine === 'torchrun' && (has(env, 'PET_NNODES') || has(env, 'PET_NODE_RANK'))) return 'pytorchjob';
  return a.engine;
}

/** The token the store needs, and where it came from. */
function tokenFor(env: Env, engine: Engine | null, jobId?: string): { token: string; source: DistEnv['tokenSource']; warning?: string } {
  if (has(env, 'FLOCKML_TOKEN')) return { token: env.FLOCKML_TOKEN!, source: 'set' };
  const id = jobId || env.FLOCKML_JOB_ID;
  if (engine && id) {
    const token = createHash('sha256').update(`flockml:${engine}:${id}`).digest('hex');
    return {
      token,
      source: 'derived',
      warning:
        `FLOCKML_TOKEN is not set, so the store's token is derived from the ${engine} job id (${id}); ` +
        'anyone who can read the job id can join the store: export a secret FLOCKML_TOKEN for jobs on shared networks',
    };
  }
  return { token: '', source: 'none' };
}

/**
 * Reads this process's place in the job from the engine that started it (see the file comment
 * for the variables each engine provides). Missing or contradictory variables throw ERR_ARG
 * naming the variable and the engine.
 */
export function readEnv(env: Env = process.env): DistEnv {
  if (env === null || typeof env !== 'object')
    throw distError('ERR_ARG', `distributed.readEnv: env must be an object of environment variables, got ${describe(env)}`);
  const engine = detectEngine(env);
  if (engine === null)
    throw distError(
      'ERR_ARG',
      'distributed: no launcher environment found (RANK/WORLD_SIZE, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK or ' +
        'JOB_COMPLETION_INDEX): start the script with `flockml launch`, srun, mpirun or a Kubernetes job',
    );
  const adapter = ADAPTERS.find((a) => a.engine === (engine === 'pytorchjob' ? 'torchrun' : engine))!;
  const p = adapter.read(env);
  const warnings = [...(p.warnings ?? [])];
  if (p.worldSize < 1) throw distError('ERR_ARG', `distributed (${engine}): the world size is ${p.worldSize}`);
  if (p.rank >= p.worldSize) throw distError('ERR_ARG', `distributed (${engine}): rank ${p.rank} is outside a world of ${p.worldSize}`);
  if (p.localWorldSize < 1 || p.localWorldSize > p.worldSize || p.localRank >= p.localWorldSize)
    throw distError(
      'ERR_ARG',
      `distributed (${engine}): local rank ${p.localRank} of ${p.localWorldSize} does not fit a world of ${p.worldSize}`,
    );
  const masterPort = int(env, engine, 'MASTER_PORT', DEFAULT_MASTER_PORT);
  if (masterPort < 1 || masterPort > 65535) throw distError('ERR_ARG', `distributed: MASTER_PORT=${masterPort} is not a TCP port`);
  let masterAddr = env.MASTER_ADDR || env.FLOCKML_MASTER_ADDR || p.master;
  if (!masterAddr) {
    // Every rank on this host: rank 0 is here too.
    if (p.localWorldSize === p.worldSize) masterAddr = '127.0.0.1';
    else
      throw distError(
        'ERR_ARG',
        `distributed (${engine}): the job spans hosts and ${engine} does not say which one runs rank 0: set MASTER_ADDR ` +
          (engine === 'openmpi' ? '(mpirun -x MASTER_ADDR=<first host>)' : engine === 'indexed-job' ? 'or FLOCKML_SERVICE' : ''),
      );
  }
  const t = tokenFor(env, engine, p.jobId);
  if (t.warning) warnings.push(t.warning);
  const { rank, worldSize, localRank, localWorldSize } = p;
  return { rank, worldSize, localRank, localWorldSize, masterAddr, masterPort, token: t.token, engine, tokenSource: t.source, warnings };
}

/** How ring groups move collective data between ranks on one host: FLOCKML_TRANSPORT. */
export type Transport = 'auto' | 'tcp' | 'shm';

/**
 * FLOCKML_TRANSPORT: unset or `auto` (shared memory between the ranks of a group on one host, TCP
 * between hosts), `tcp` or `shm` (forced; an error where the ranks span hosts).
 */
export function readTransport(env: Env = process.env): Transport {
  const v = env.FLOCKML_TRANSPORT;
  if (v === undefined || v === '') return 'auto';
  if (v === 'auto' || v === 'tcp' || v === 'shm') return v;
  throw distError('ERR_ARG', `distributed: FLOCKML_TRANSPORT=${v} is not one of auto, tcp, shm`);
}

/**
 * FLOCKML_HOST_ID: overrides the host identity ranks compare to find the ones that share a host
 * (by default the host name and boot id). A knob for testing, where ranks of one machine act as
 * several hosts (4 ranks as 2 hosts x 2, say), and for containers that share /dev/shm but not a
 * host name. Ranks with different ids never share memory; undefined when unset.
 */
export function readHostId(env: Env = process.env): string | undefined {
  const v = env.FLOCKML_HOST_ID;
  if (v === undefined || v === '') return undefined;
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(v))
    throw distError('ERR_ARG', `distributed: FLOCKML_HOST_ID='${v}' must be 1 to 64 letters, digits or . _ : -`);
  return v;
}

/** Where one `flockml launch` (one per node) sits among the engine's tasks. */
export interface NodeEnv {
  engine: Engine;
  nodeRank: number;
  nnodes: number;
  masterAddr?: string;
  masterPort?: number;
  /** PyTorchJob's nprocPerNode (PET_NPROC_PER_NODE). */
  nprocPerNode?: number;
  token: string;
  tokenSource: DistEnv['tokenSource'];
  warnings: string[];
}

/**
 * The launcher's own place when an engine started it once per node (srun --ntasks-per-node=1,
 * mpirun --npernode 1, one pod per node): the engine's rank and size become the node rank and
 * node count. Null when no engine's variables are present.
 */
export function readNodeEnv(env: Env = process.env): NodeEnv | null {
  const engine = detectEngine(env);
  if (engine === null) return null;
  if (engine === 'pytorchjob' && has(env, 'PET_NNODES')) {
    const e = 'pytorchjob';
    const nnodes = int(env, e, 'PET_NNODES'),
      nodeRank = int(env, e, 'PET_NODE_RANK', int(env, e, 'RANK'));
    if (nodeRank >= nnodes) throw distError('ERR_ARG', `distributed (${e}): PET_NODE_RANK=${nodeRank} is outside PET_NNODES=${nnodes}`);
    const port = env.PET_MASTER_PORT || env.MASTER_PORT;
    const t = tokenFor(env, engine);
    return {
      token: t.token,
      tokenSource: t.source,
      engine,
      nnodes,
      nodeRank,
      masterAddr: env.PET_MASTER_ADDR || env.MASTER_ADDR || undefined,
      masterPort: port ? int({ P: port }, e, 'P') : undefined,
      nprocPerNode: has(env, 'PET_NPROC_PER_NODE') ? int(env, e, 'PET_NPROC_PER_NODE') : undefined,
      warnings: t.warning ? [t.warning] : [],
    };
  }
  // A launcher starts its own local ranks, so PET_NPROC_PER_NODE > 1 is expected here.
  const d = readEnv({ ...env, FLOCKML_LAUNCHED: '1', FLOCKML_ENGINE: engine === 'pytorchjob' ? 'torchrun' : engine });
  return {
    engine,
    nodeRank: d.rank,
    nnodes: d.worldSize,
    masterAddr: d.masterAddr,
    masterPort: d.masterPort,
    token: d.token,
    tokenSource: d.tokenSource,
    warnings: d.warnings,
  };
}
