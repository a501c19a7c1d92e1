/** Starts N real worker processes on loopback with the launcher's environment, and collects their output. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { pathToFileURL } from 'node:url';

export const tsx = join(__dirname, '..', '..', 'node_modules', '.bin', 'tsx');
// Workers run as `node --import <tsx loader>`, not through the tsx wrapper: a SIGKILL must reach
// the process that does the work, not a parent that would leave it orphaned.
export const tsNode = [process.execPath, '--import', pathToFileURL(require.resolve('tsx')).href];

/**
 * A port unlikely to collide with another test file running at the same time, and below the
 * kernel's ephemeral range (ip_local_port_range): a port in that range can already be the local
 * end of some outgoing connection (the ring backend makes many), and listening on it then fails
 * with EADDRINUSE.
 */
export function freePort(): number {
  const low = Math.min(ephemeralLow(), 65536);
  const from = Math.min(20000, low - 2000);
  return from + Math.floor(Math.random() * (low - from));
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 4000 ? low : 32768;
  } catch {
    return 32768;
  }
}

export interface RankResult {
  rank: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
}

export interface Job {
  children: ChildProcess[];
  done: Promise<RankResult[]>;
  kill(): void;
}

/** Runs `worker` as ranks 0..n-1; every process is killed after `timeoutMs` so a hang cannot outlive the test. */
export function runRanks(worker: string, n: number, opts: { env?: NodeJS.ProcessEnv; args?: string[]; timeoutMs?: number } = {}): Job {
  const port = freePort();
  const children: ChildProcess[] = [];
  const results: Promise<RankResult>[] = [];
  for (let rank = 0; rank < n; rank++) {
    const child = spawn(tsNode[0], [...tsNode.slice(1), join(__dirname, 'workers', worker), ...(opts.args ?? [])], {
      env: {
        ...process.env,
        RANK: String(rank),
        LOCAL_RANK: String(rank),
        WORLD_SIZE: String(n),
        LOCAL_WORLD_SIZE: String(n),
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port),
        FLOCKML_TOKEN: 'test-token',
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    results.push(new Promise((resolve) => child.on('close', (code, signal) => resolve({ rank, code, signal, out }))));
  }
  const kill = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  const timer = setTimeout(kill, opts.timeoutMs ?? 90_000);
  const done = Promise.all(results).finally(() => clearTimeout(timer));
  return { children, done, kill };
}

/** Fails with every rank's output when any rank did not exit 0. */
export function expectAllOk(results: RankResult[]): void {
  const bad = results.filter((r) => r.code !== 0);
  if (bad.length) throw new Error(bad.map((r) => `rank ${r.rank} exited ${r.code ?? r.signal}:\n${r.out}`).join('\n'));
}

export { rejection } from '../helpers/errors';

/** The first line of `r`'s output that starts with `start`, parsed as JSON (throws with the output when none). */
export function line<T>(r: RankResult, start: string): T {
  const l = r.out.split('\n').find((s) => s.startsWith(start));
  if (!l) throw new Error(`rank ${r.rank} printed no ${start} line (exit ${r.code ?? r.signal}):\n${r.out}`);
  return JSON.parse(l);
}

/** The output (stdout and stderr) of ranks 0 … n−1 of `job` once they exit; then the other ranks are killed. */
export async function survivors(job: Job, n: number): Promise<RankResult[]> {
  const outs = await Promise.all(
    job.children.slice(0, n).map(
      (c, rank) =>
        new Promise<RankResult>((resolve) => {
          let out = '';
          c.stdout?.on('data', (d) => (out += d));
          c.stderr?.on('data', (d) => (out += d));
          c.on('close', (code, signal) => resolve({ rank, code, signal, out }));
        }),
    ),
  );
  job.kill();
  await job.done;
  return outs;
}

/** `worker` on one rank per entry of `ids` (comma-separated), each rank taking its entry as its host identity. */
export const hosts = (ids: string, worker: string, env: NodeJS.ProcessEnv = {}, timeoutMs?: number) =>
  runRanks('hosts.ts', ids.split(',').length, { env: { HOST_IDS: ids, WORKER: worker, ...env }, timeoutMs });
