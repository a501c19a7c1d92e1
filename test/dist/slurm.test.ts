/**
 * Slurm for real: the test starts munged, slurmctld and slurmd on this host with a temporary
 * configuration (loopback, free ports), then `srun -n 2` runs the DDP worker with no flockml
 * launcher. Where the daemons cannot start (no slurm-wlm/munge, not root, a container without
 * the privileges) it says why and runs the same worker under a simulated srun environment.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, tsNode } from './harness';

const worker = join(__dirname, 'workers', 'train_resume.ts');
const dir = mkdtempSync(join(tmpdir(), 'flockml-slurm-'));
const started: ChildProcess[] = [];

function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|FLOCKML_TOKEN|FLOCKML_ENGINE|SLURM_.*|OMPI_.*|PMI_.*|PMIX_.*)$/.test(k))
      env[k] = v;
  return { ...env, STEPS: '8', ...extra };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts a one-node cluster; resolves with SLURM_CONF, or a reason it cannot. */
async function startCluster(): Promise<{ conf: string } | { why: string }> {
  if (process.env.FLOCKML_TEST_SIMULATE_SLURM) return { why: 'FLOCKML_TEST_SIMULATE_SLURM is set' };
  const which = (b: string) => spawnSync('sh', ['-c', `command -v ${b}`]).status === 0;
  for (const b of ['munged', 'slurmctld', 'slurmd', 'srun', 'sinfo'])
    if (!which(b)) return { why: `${b} not found (apt-get install slurm-wlm munge)` };
  if (process.getuid?.() !== 0) return { why: 'not root: slurmd needs root to start job steps' };
  if (!existsSync('/etc/munge/munge.key')) return { why: 'no /etc/munge/munge.key' };
  const m = join(dir, 'munge');
  for (const d of [m, join(dir, 'state'), join(dir, 'spool')]) mkdirSync(d, { recursive: true });
  copyFileSync('/etc/munge/munge.key', join(m, 'key'));
  chmodSync(join(m, 'key'), 0o600);
  const munge = spawnSync(
    'munged',
    ['--force', `--key-file=${m}/key`, `--socket=${m}/sock`, `--pid-file=${m}/pid`, `--log-file=${m}/log`, `--seed-file=${m}/seed`],
    { encoding: 'utf8' },
  );
  if (munge.status !== 0) return { why: `munged did not start: ${munge.stderr.trim()}` };
  const host = hostname().split('.')[0];
  const cpus = /CPUs=(\d+)/.exec(spawnSync('slurmd', ['-C'], { encoding: 'utf8' }).stdout)?.[1] ?? '2';
  const conf = join(dir, 'slurm.conf');
  writeFileSync(
    conf,
    [
      'ClusterName=flockmltest',
      `SlurmctldHost=${host}(127.0.0.1)`,
      `SlurmctldPort=${freePort()}`,
      `SlurmdPort=${freePort()}`,
      'SlurmUser=root',
      'SlurmdUser=root',
      'AuthType=auth/munge',
      'CredType=cred/munge',
      `AuthInfo=socket=${m}/sock`,
      `StateSaveLocation=${dir}/state`,
      `SlurmdSpoolDir=${dir}/spool`,
      `SlurmctldPidFile=${dir}/ctld.pid`,
      `SlurmdPidFile=${dir}/d.pid`,
      'ProctrackType=proctrack/linuxproc',
      'TaskPlugin=task/none',
      'JobAcctGatherType=jobacct_gather/none',
      'SelectType=select/cons_tres',
      'SelectTypeParameters=CR_Core',
      'MpiDefault=none',
      'ReturnToService=2',
      `NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN`,
      'PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE',
      '',
    ].join('\n'),
  );
  const env = { ...process.env, SLURM_CONF: conf };
  const log: string[] = [];
  for (const [cmd, args] of [
    ['slurmctld', ['-D', '-i']],
    ['slurmd', ['-D']],
  ] as const) {
    const p = spawn(cmd, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout!.on('data', (d) => log.push(String(d)));
    p.stderr!.on('data', (d) => log.push(String(d)));
    started.push(p);
  }
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(300)) {
    if (started.some((p) => p.exitCode !== null))
      return { why: `a daemon exited: ${log.join('').trim().split('\n').slice(-3).join(' | ')}` };
    const s = spawnSync('sinfo', ['-h', '-o', '%T'], { env, encoding: 'utf8' });
    if (/^idle/m.test(s.stdout)) return { conf };
  }
  return { why: `the node never became idle: ${log.join('').trim().split('\n').slice(-3).join(' | ')}` };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops the daemons and waits until munged has exited, so its directory can be removed. */
async function stopCluster(): Promise<void> {
  for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  const file = join(dir, 'munge', 'pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8'));
  if (!(pid > 0) || !alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  for (const deadline = Date.now() + 5000; alive(pid) && Date.now() < deadline; ) await sleep(50);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

test('srun -n 2 trains a DDP run without the flockml launcher (or a simulated srun where Slurm cannot start)', async () => {
  try {
    const cluster = await startCluster();
    if ('conf' in cluster) {
      const r = spawnSync('srun', ['-n', '2', '--time=2', tsNode[0], ...tsNode.slice(1), worker], {
        encoding: 'utf8',
        timeout: 90_000,
        env: cleanEnv({ SLURM_CONF: cluster.conf, MASTER_PORT: String(freePort()) }),
      });
      const log = r.stdout + r.stderr;
      assert.is(r.status, 0, log);
      console.log('  slurm: ran for real (slurmctld + slurmd on this host, srun -n 2)');
      assert.match(log, /done engine=slurm rank=0 world=2 local=0 token=derived/);
      assert.match(log, /done engine=slurm rank=1 world=2 local=1 token=derived/);
      assert.match(log, /derived from the slurm job id/);
      return;
    }
    console.log(`  slurm: daemons not started (${cluster.why}); simulating srun's environment instead`);
    const port = String(freePort());
    const ranks = [0, 1].map(
      (rank) =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          const env = cleanEnv({
            MASTER_PORT: port,
            SLURM_JOB_ID: '17',
            SLURM_STEP_ID: '0',
            SLURM_PROCID: String(rank),
            SLURM_LOCALID: String(rank),
            SLURM_NODEID: '0',
            SLURM_NTASKS: '2',
            SLURM_STEP_NUM_TASKS: '2',
            SLURM_STEP_TASKS_PER_NODE: '2',
            SLURM_STEP_NODELIST: 'localhost',
            SLURM_JOB_NODELIST: 'localhost',
          });
          const p = spawn(tsNode[0], [...tsNode.slice(1), worker], { env, stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          p.stdout!.on('data', (d) => (out += d));
          p.stderr!.on('data', (d) => (out += d));
          const t = setTimeout(() => p.kill('SIGKILL'), 90_000);
          p.on('close', (code) => {
            clearTimeout(t);
            resolve({ code, out });
          });
        }),
    );
    const results = await Promise.all(ranks);
    results.forEach((r, rank) => {
      assert.is(r.code, 0, r.out);
      assert.match(r.out, new RegExp(`done engine=slurm rank=${rank} world=2 local=${rank} token=derived`));
    });
  } finally {
    await stopCluster();
    // munged may still be removing its socket and pid files as it exits: retry instead of racing it.
    rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
});

test.run();
