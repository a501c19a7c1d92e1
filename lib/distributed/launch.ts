/**
 * The launcher behind `flockml launch`: starts one process per local rank with the torchrun
 * environment, prefixes their output with `[rank]`, forwards SIGINT/SIGTERM, and when one fails
 * stops the rest and reports the failing rank's exit code. Each rank also watches a pipe from the
 * launcher (launcher_watch.ts) and exits when it closes, so ranks do not outlive a launcher that
 * was killed outright.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { constants } from 'node:os';
import { extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkOptions, describe } from '../errors';
import { distError, intOption, stringOption } from './errors';

export interface LaunchOptions {
  script: string;
  args?: string[];
  nprocPerNode: number;
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
] as const;

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
  const nnodes = o.nnodes ?? 1,
    nodeRank = o.nodeRank ?? 0,
    nproc = o.nprocPerNode;
  if (!Number.isInteger(nproc) || nproc < 1)
    throw distError('ERR_ARG', `launch: --nproc-per-node must be a positive integer, got ${nproc}`);
  if (!Number.isInteger(nnodes) || nnodes < 1 || !Number.isInteger(nodeRank) || nodeRank < 0 || nodeRank >= nnodes)
    throw distError('ERR_ARG', `launch: --node-rank ${nodeRank} is outside --nnodes ${nnodes}`);
  const base = { ...process.env, ...o.env };
  let token = base.FLOCKML_TOKEN;
  if (!token) {
    if (nnodes > 1) throw distError('ERR_ARG', 'launch: multi-node jobs need the same FLOCKML_TOKEN exported on every node');
    token = randomBytes(24).toString('hex');
  }
  const world = nnodes * nproc;
  const [cmd, ...pre] = interpreterFor(o.script);
  const out = o.stdout ?? process.stdout,
    err = o.stderr ?? process.stderr;
  const children: ChildProcess[] = [];
  let failure: number | null = null;
  let live = nproc;

  return new Promise((resolve) => {
    const stopAll = (signal: NodeJS.Signals) => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
    };
    const forward = (s: NodeJS.Signals) => () => stopAll(s);
    const onInt = forward('SIGINT'),
      onTerm = forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    let killTimer: NodeJS.Timeout | null = null;

    for (let local = 0; local < nproc; local++) {
      const rank = nodeRank * nproc + local;
      const child = spawn(cmd, [...pre, ...(o.args ?? [])], {
        // Slot 3: the pipe the rank watches; it closes when this process ends, however it ends.
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
        env: {
          ...base,
          FLOCKML_LAUNCHER_FD: String(LAUNCHER_FD),
          RANK: String(rank),
          LOCAL_RANK: String(local),
          WORLD_SIZE: String(world),
          LOCAL_WORLD_SIZE: String(nproc),
          GROUP_RANK: String(nodeRank),
          MASTER_ADDR: o.masterAddr ?? base.MASTER_ADDR ?? '127.0.0.1',
          MASTER_PORT: String(o.masterPort ?? base.MASTER_PORT ?? 29500),
          FLOCKML_TOKEN: token,
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
          killTimer = setTimeout(() => stopAll('SIGKILL'), o.killGraceMs ?? 5000);
          killTimer.unref();
        }
      });
      child.on('close', () => {
        if (--live > 0) return;
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        if (killTimer) clearTimeout(killTimer);
        resolve(failure ?? 0);
      });
    }
  });
}
