/**
 * The Kubernetes recipes in deploy/k8s: they parse, request GPUs and shared memory, and the
 * environment each pod gets (simulated per pod index, as the operator or the Job controller sets
 * it) maps every process to a distinct global rank with one master. kubectl validates them
 * client-side when it can reach a server; without one it cannot, and the test says so.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { readNodeEnv } from '../../lib/distributed/env';

const dir = join(__dirname, '..', '..', 'deploy', 'k8s');
// biome-ignore lint/suspicious/noExplicitAny: manifests are untyped YAML
type Doc = any;
const load = (f: string): Doc[] => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS());

/** A container's literal env entries; values from secrets become a placeholder. */
function containerEnv(c: Doc): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const e of c.env ?? []) env[e.name] = e.value ?? 'from-secret';
  return env;
}

function checkPod(spec: Doc): Doc {
  const c = spec.containers[0];
  assert.ok(c.resources.limits['nvidia.com/gpu'] > 0, 'requests GPUs');
  const shm = spec.volumes.find((v: Doc) => v.emptyDir?.medium === 'Memory');
  assert.ok(shm && c.volumeMounts.some((m: Doc) => m.name === shm.name && m.mountPath === '/dev/shm'), 'shared memory on /dev/shm');
  const env = containerEnv(c);
  assert.ok(env.NCCL_SOCKET_IFNAME && env.FLOCKML_TOKEN, 'NCCL interface and the token from a secret');
  assert.equal(c.command.slice(0, 3), ['npx', 'flockml', 'launch']);
  return c;
}

/** Global ranks of every process of every pod: pod node rank x nproc + local rank, all distinct, one master. */
function checkRanks(pods: Array<{ env: NodeJS.ProcessEnv; nproc?: number }>, expectWorld: number): void {
  const seen = new Set<number>(),
    masters = new Set<string>();
  for (const p of pods) {
    const n = readNodeEnv(p.env)!;
    assert.ok(n, 'an engine is detected');
    const nproc = p.nproc ?? n.nprocPerNode!;
    assert.is(n.nnodes * nproc, expectWorld);
    for (let local = 0; local < nproc; local++) seen.add(n.nodeRank * nproc + local);
    masters.add(`${n.masterAddr}:${n.masterPort}`);
    assert.is(n.tokenSource, 'set');
  }
  assert.equal(
    [...seen].sort((a, b) => a - b),
    Array.from({ length: expectWorld }, (_, i) => i),
  );
  assert.is(masters.size, 1, [...masters].join());
}

test('PyTorchJob: pods map to node ranks through the operator variables', () => {
  const [job] = load('pytorchjob.yaml');
  assert.is(job.kind, 'PyTorchJob');
  const nproc = Number(job.spec.nprocPerNode);
  const specs = job.spec.pytorchReplicaSpecs;
  const nnodes = specs.Master.replicas + specs.Worker.replicas;
  const pods: Array<{ env: NodeJS.ProcessEnv }> = [];
  // As the training operator sets them: the master is rank 0, worker i is rank i + 1.
  for (const [role, count] of [
    ['Master', specs.Master.replicas],
    ['Worker', specs.Worker.replicas],
  ] as const)
    for (let i = 0; i < count; i++) {
      const rank = role === 'Master' ? 0 : i + 1;
      const c = checkPod(specs[role].template.spec);
      pods.push({
        env: {
          ...containerEnv(c),
          MASTER_ADDR: 'flockml-train-master-0',
          MASTER_PORT: '23456',
          WORLD_SIZE: String(nnodes * nproc),
          RANK: String(rank),
          PET_MASTER_ADDR: 'flockml-train-master-0',
          PET_MASTER_PORT: '23456',
          PET_NNODES: String(nnodes),
          PET_NODE_RANK: String(rank),
          PET_NPROC_PER_NODE: String(nproc),
        },
      });
    }
  checkRanks(pods, nnodes * nproc);
});

test('Indexed Job + headless Service: JOB_COMPLETION_INDEX is the node rank, pod 0 the master', () => {
  const docs = load('indexed-job.yaml');
  const svc = docs.find((d) => d.kind === 'Service'),
    job = docs.find((d) => d.kind === 'Job');
  assert.is(svc.spec.clusterIP, 'None');
  assert.is(job.spec.completionMode, 'Indexed');
  assert.is(job.spec.template.spec.subdomain, svc.metadata.name);
  const c = checkPod(job.spec.template.spec);
  const env = containerEnv(c);
  assert.is(Number(env.FLOCKML_NNODES), job.spec.completions);
  const nproc = Number(c.command[c.command.indexOf('--nproc-per-node') + 1]);
  const pods = Array.from({ length: job.spec.completions }, (_, i) => ({
    env: { ...env, JOB_COMPLETION_INDEX: String(i), HOSTNAME: `${job.metadata.name}-${i}` },
    nproc,
  }));
  checkRanks(pods, job.spec.completions * nproc);
  assert.is(readNodeEnv(pods[1].env)?.masterAddr, `${job.metadata.name}-0.${svc.metadata.name}`);
});

test('kubectl validates the manifests client-side (where it can)', () => {
  if (spawnSync('sh', ['-c', 'command -v kubectl']).status !== 0) {
    console.log('  kubectl: skipped, not installed');
    return;
  }
  for (const f of ['indexed-job.yaml', 'pytorchjob.yaml']) {
    const r = spawnSync(
      'kubectl',
      ['apply', '--dry-run=client', '--validate=false', '--request-timeout=3s', '-o', 'name', '-f', join(dir, f)],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    if (r.status !== 0 && /unable to recognize|connection refused|no such host|timeout/i.test(r.stderr)) {
      // Even a client-side dry run maps kinds to resources through the server's discovery API.
      console.log(`  kubectl: skipped for ${f}: no API server to reach (kubectl apply --dry-run=client needs one for discovery)`);
      continue;
    }
    assert.is(r.status, 0, r.stderr);
  }
});

test.run();
