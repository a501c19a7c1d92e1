/**
 * The launcher behind `flockml launch`: starts one process per local rank with the torchrun
 * environment, prefixes their output with `[rank]`, forwards SIGINT/SIGTERM, and when one fails
 * stops the rest and reports the failing rank's exit code. Each rank also watches a pipe from the
 * launcher (launcher_watch.ts) and exits when it closes, so ranks do not outlive a launcher that
 * was killed outright.
 *
 * Under Slurm, MPI or Kubernetes, run once per node by the engine, the launcher takes its node rank,
 * node count, master and token from the engine's variables (env.ts); flags override them.
 *
 * With maxRestarts, a failed group is stopped and started again after a backoff, as a new
 * generation: the generation is part of every rank's store token, so a rank left over from an
 * earlier attempt (on another node) cannot join. The script resumes from its latest checkpoint.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { constants } from 'node:os';
import { extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkOptions, describe } from '../errors';
import { readNodeEnv, DEFAULT_MASTER_PORT } from './env';
import { distError, intOption, stringOption } from './errors';

export interface LaunchOptions {
  script: string;
  args?: string[];
  /** Local ranks on this node (default PyTorchJob's PET_NPROC_PER_NODE, else 1). */
  nprocPerNode?: number;
  nnodes?: number;
  nodeRank?: number;
  masterAddr?: string;
  masterPort?: number;
  /** Extra environment for every rank (on top of process.env). */
  env?: NodeJS.ProcessEnv;
  /** Where prefixed lines go (default process.stdout / process.stderr). */
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** Grace between SIGTERM and SIGKILL when tearing down the survivors (default 5000). */
  killGraceMs?: number;
  /** How many times to restart the whole group after a rank fails (default 0). */
  maxRestarts?: number;
  /** Wait before the first restart, doubled for each further one up to 30 s, ms (default 1000). */
  restartBackoffMs?: number;
}

const LAUNCH_OPTIONS = [
  'script',
  'args',
  'nprocPerNode',
  'nnodes',
  'nodeRank',
  'masterAddr',
  'masterPort',
  'env',
  'stdout',
  'stderr',
  'killGraceMs',
  'maxRestarts',
  'restartBackoffMs',
] as const;

const MAX_BACKOFF_MS = 30_000;

/** The rank's fd on which it watches the launcher (stdio slot 3 of the spawn below). */
const LAUNCHER_FD = 3;

function interpreterFor(script: string): string[] {
  // TypeScript runs through tsx, as in the rest of flockml's tooling.
  // The loader, not the tsx CLI: the CLI is a parent process, and a rank must be the process we
  // signal, or killing it would orphan the real worker.
  // The launcher watch is a sibling of this file: .ts when flockml itself runs from source.
  const watch = join(__dirname, `launcher_watch${extname(__filename)}`);
  const preload = ['--import', pathToFileURL(watch).href];
  if (/\.[cm]?ts$/.test(script) || watch.endsWith('.ts')) {
    let loader: string;
    try {
      loader = require.resolve('tsx');
    } catch {
      throw distError('ERR_ARG', `launch: ${script} is TypeScript, which needs tsx (npm install --save-dev tsx), or pass the compiled .js`);
    }
    return [process.execPath, '--import', pathToFileURL(loader).href, ...preload, script];
  }
  return [process.execPath, ...preload, script];
}

function checkLaunchOptions(o: LaunchOptions): void {
  checkOptions('launch', o, LAUNCH_OPTIONS);
  stringOption('launch', 'script', o.script);
  if (o.args !== undefined && (!Array.isArray(o.args) || o.args.some((a) => typeof a !== 'string')))
    throw distError('ERR_ARG', `launch: args must be an array of strings, got ${describe(o.args)}`);
  if (o.masterAddr !== undefined) stringOption('launch', 'masterAddr', o.masterAddr);
  if (o.masterPort !== undefined) intOption('launch', 'masterPort (--master-port)', o.masterPort, 1, 65535);
  if (o.killGraceMs !== undefined) intOption('launch', 'killGraceMs', o.killGraceMs, 0);
  if (o.maxRestarts !== undefined) intOption('launch', 'maxRestarts (--max-restarts)', o.maxRestarts, 0, 1_000_000);
  if (o.restartBackoffMs !== undefined)
    intOption('launch', 'restartBackoffMs (--restart-backoff-ms)', o.restartBackoffMs, 0, MAX_BACKOFF_MS);
  if (o.env !== undefined && (o.env === null || typeof o.env !== 'object'))
    throw distError('ERR_ARG', `launch: env must be an object, got ${describe(o.env)}`);
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const n = signal ? (constants.signals as Record<string, number>)[signal] : undefined;
  return 128 + (n ?? 1);
}

function pipeLines(from: NodeJS.ReadableStream | null, to: NodeJS.WritableStream, prefix: string): void {
  if (!from) return;
  createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`${prefix}${line}\n`));
}

/** Runs the job; resolves with 0 when every rank exits cleanly, else the first failing rank's code. */
export function launch(o: LaunchOptions): Promise<number> {
  checkLaunchOptions(o);
  const base = { ...process.env, ...o.env };
  const node = o.nnodes === undefined && o.nodeRank === undefined ? readNodeEnv(base) : null;
  const nnodes = o.nnodes ?? node?.nnodes ?? 1,
    nodeRank = o.nodeRank ?? node?.nodeRank ?? 0,
    nproc = o.nprocPerNode ?? node?.nprocPerNode ?? 1;
  if (!Number.isInteger(nproc) || nproc < 1)
    throw distError('ERR_ARG', `launch: --nproc-per-node must be a positive integer, got ${nproc}`);
  if (!Number.isInteger(nnodes) || nnodes < 1 || !Number.isInteger(nodeRank) || nodeRank < 0 || nodeRank >= nnodes)
    throw distError('ERR_ARG', `launch: --node-rank ${nodeRank} is outside --nnodes ${nnodes}`);
  const err = o.stderr ?? process.stderr;
  let token = base.FLOCKML_TOKEN || node?.token;
  if (node && nodeRank === 0) for (const w of node.warnings) err.write(`[launch] warning: ${w}\n`);
  if (!token) {
    if (nnodes > 1) throw distError('ERR_ARG', 'launch: multi-node jobs need the same FLOCKML_TOKEN exported on every node');
    token = randomBytes(24).toString('hex');
  }
  // Checked once here, rather than failing in every rank with a stack of its own.
  if (!existsSync(o.script)) throw distError('ERR_ARG', `launch: no such script: ${o.script}`);
  const group: Group = {
    ...o,
    base,
    nnodes,
    nodeRank,
    nproc,
    token,
    masterAddr: o.masterAddr ?? base.MASTER_ADDR ?? node?.masterAddr ?? '127.0.0.1',
    masterPort: o.masterPort ?? (base.MASTER_PORT ? Number(base.MASTER_PORT) : (node?.masterPort ?? DEFAULT_MASTER_PORT)),
  };
  return supervise(group);
}

/** Runs generations of the group until one succeeds, the restarts are spent, or the launcher is signalled. */
async function supervise(group: Group): Promise<number> {
  const err = group.stderr ?? process.stderr;
  let interrupted = false;
  let current: ((s: NodeJS.Signals) => void) | null = null;
  const forward = (s: NodeJS.Signals) => () => {
    interrupted = true;
    current?.(s);
  };
  const onInt = forward('SIGINT'),
    onTerm = forward('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    const maxRestarts = group.maxRestarts ?? 0;
    for (let generation = 0; ; generation++) {
      const code = await runGroup(group, generation, (stop) => (current = stop));
      if (code === 0 || interrupted || generation >= maxRestarts) return code;
      const wait = Math.min(MAX_BACKOFF_MS, (group.restartBackoffMs ?? 1000) * 2 ** generation);
      err.write(`[launch] restarting the group (restart ${generation + 1} of ${maxRestarts}) in ${wait} ms\n`);
      await new Promise((r) => setTimeout(r, wait));
      if (interrupted) return code;
    }
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
}

interface Group extends LaunchOptions {
  base: NodeJS.ProcessEnv;
  nnodes: number;
  nodeRank: number;
  nproc: number;
  token: string;
  masterAddr: string;
  masterPort: number;
}

/** One attempt: starts this node's ranks, tears them all down when one fails, resolves with the job's code. */
function runGroup(g: Group, generation: number, onStart: (stop: (s: NodeJS.Signals) => void) => void): Promise<number> {
  const { nproc, nodeRank } = g;
  const world = g.nnodes * nproc;
  const [cmd, ...pre] = interpreterFor(g.script);
  const out = g.stdout ?? process.stdout,
    err = g.stderr ?? process.stderr;
  const children: ChildProcess[] = [];
  let failure: number | null = null;
  let live = nproc;

  return new Promise((resolve) => {
    const stopAll = (signal: NodeJS.Signals) => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
    };
    onStart(stopAll);
    let killTimer: NodeJS.Timeout | null = null;

    for (let local = 0; local < nproc; local++) {
      const rank = nodeRank * nproc + local;
      const child = spawn(cmd, [...pre, ...(g.args ?? [])], {
        // Slot 3: the pipe the rank watches; it closes when this process ends, however it ends.
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
        env: {
          ...g.base,
          FLOCKML_LAUNCHER_FD: String(LAUNCHER_FD),
          // The ranks read these, not the engine's variables that describe this launcher.
          FLOCKML_ENGINE: 'torchrun',
          FLOCKML_LAUNCHED: '1',
          FLOCKML_RESTART_COUNT: String(generation),
          RANK: String(rank),
          LOCAL_RANK: String(local),
          WORLD_SIZE: String(world),
          LOCAL_WORLD_SIZE: String(nproc),
          GROUP_RANK: String(nodeRank),
          MASTER_ADDR: g.masterAddr,
          MASTER_PORT: String(g.masterPort),
          // A new generation is a new secret: ranks of an earlier attempt are refused by the store.
          FLOCKML_TOKEN: generation === 0 ? g.token : `${g.token}.gen${generation}`,
        },
      });
      children.push(child);
      pipeLines(child.stdout, out, `[${rank}] `);
      pipeLines(child.stderr, err, `[${rank}] `);
      child.on('error', (e) => err.write(`[launch] rank ${rank}: ${e.message}\n`));
      // Never read; let go once the rank exits so that 'close' does not wait on a process the
      // rank started that inherited its end.
      const watched = child.stdio[LAUNCHER_FD] as (NodeJS.ReadableStream & { destroy(): void }) | null;
      child.on('exit', (code, signal) => {
        watched?.destroy();
        const status = exitCodeOf(code, signal);
        if (status !== 0 && failure === null) {
          failure = status;
          err.write(`[launch] rank ${rank} exited with ${signal ?? `code ${code}`}; stopping the other ranks\n`);
          stopAll('SIGTERM');
          killTimer = setTimeout(() => stopAll('SIGKILL'), g.killGraceMs ?? 5000);
          killTimer.unref();
        }
      });
      child.on('close', () => {
        if (--live > 0) return;
        if (killTimer) clearTimeout(killTimer);
        resolve(failure ?? 0);
      });
    }
  });
}
