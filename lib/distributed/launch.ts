/**
 * The launcher behind `flockml launch`: starts one process per local rank with the torchrun
 * environment, prefixes their output with `[rank]`, forwards SIGINT/SIGTERM, and when one fails
 * stops the rest and reports the failing rank's exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { constants } from 'node:os';
import { pathToFileURL } from 'node:url';

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

function interpreterFor(script: string): string[] {
  // TypeScript runs through tsx, as in the rest of flockml's tooling.
  // The loader, not the tsx CLI: the CLI is a parent process, and a rank must be the process we
  // signal, or killing it would orphan the real worker.
  if (/\.[cm]?ts$/.test(script)) {
    let loader: string;
    try {
      loader = require.resolve('tsx');
    } catch {
      throw new RangeError(`launch: ${script} is TypeScript, which needs tsx (npm install --save-dev tsx), or pass the compiled .js`);
    }
    return [process.execPath, '--import', pathToFileURL(loader).href, script];
  }
  return [process.execPath, script];
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
  const nnodes = o.nnodes ?? 1, nodeRank = o.nodeRank ?? 0, nproc = o.nprocPerNode;
  if (!Number.isInteger(nproc) || nproc < 1) throw new RangeError(`launch: --nproc-per-node must be a positive integer, got ${nproc}`);
  if (!Number.isInteger(nnodes) || nnodes < 1 || !Number.isInteger(nodeRank) || nodeRank < 0 || nodeRank >= nnodes)
    throw new RangeError(`launch: --node-rank ${nodeRank} is outside --nnodes ${nnodes}`);
  const base = { ...process.env, ...o.env };
  let token = base.FLOCKML_TOKEN;
  if (!token) {
    if (nnodes > 1) throw new RangeError('launch: multi-node jobs need the same FLOCKML_TOKEN exported on every node');
    token = randomBytes(24).toString('hex');
  }
  const world = nnodes * nproc;
  const [cmd, ...pre] = interpreterFor(o.script);
  const out = o.stdout ?? process.stdout, err = o.stderr ?? process.stderr;
  const children: ChildProcess[] = [];
  let failure: number | null = null;
  let live = nproc;

  return new Promise((resolve) => {
    const stopAll = (signal: NodeJS.Signals) => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
    };
    const forward = (s: NodeJS.Signals) => () => stopAll(s);
    const onInt = forward('SIGINT'), onTerm = forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    let killTimer: NodeJS.Timeout | null = null;

    for (let local = 0; local < nproc; local++) {
      const rank = nodeRank * nproc + local;
      const child = spawn(cmd, [...pre, ...(o.args ?? [])], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...base,
          RANK: String(rank), LOCAL_RANK: String(local), WORLD_SIZE: String(world), LOCAL_WORLD_SIZE: String(nproc),
          GROUP_RANK: String(nodeRank), MASTER_ADDR: o.masterAddr ?? base.MASTER_ADDR ?? '127.0.0.1',
          MASTER_PORT: String(o.masterPort ?? base.MASTER_PORT ?? 29500), FLOCKML_TOKEN: token,
        },
      });
      children.push(child);
      pipeLines(child.stdout, out, `[${rank}] `);
      pipeLines(child.stderr, err, `[${rank}] `);
      child.on('error', (e) => err.write(`[launch] rank ${rank}: ${e.message}\n`));
      child.on('exit', (code, signal) => {
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
