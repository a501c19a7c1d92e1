/**
 * A Python anchor kept running beside a bench, so that flockml and the anchor can alternate round
 * by round in one command: both then see the same machine, whose speed drifts by tens of percent
 * over a minute when it is shared. The script runs with `--serve`, prints one JSON line when
 * ready, then answers each request line with one JSON line.
 *
 * `--openblas DIR` (or FLOCKML_OPENBLAS_DIR) puts DIR first on the anchor's LD_LIBRARY_PATH, so
 * numpy and PyTorch load OpenBLAS's libblas.so.3 from there when the system's is the reference BLAS.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';

export type AnchorLine = Record<string, unknown>;

export class Anchor {
  private readonly lines: AsyncIterator<string>;
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    rl: Interface,
    private readonly stderr: () => string,
  ) {
    this.lines = rl[Symbol.asyncIterator]();
  }

  /** Starts `script --serve ...args`; resolves with the anchor and its ready line, or null (and why) when it cannot run. */
  static async start(script: string, args: string[] = []): Promise<{ anchor: Anchor; ready: AnchorLine } | { skipped: string }> {
    const child = spawn('/usr/bin/python3', [script, '--serve', ...args], { env: anchorEnv() });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    const spawnError = new Promise<null>((resolve) =>
      child.on('error', (e) => {
        err += e.message;
        resolve(null);
      }),
    );
    const anchor = new Anchor(child, createInterface({ input: child.stdout }), () => err);
    const ready = await Promise.race([anchor.next(), spawnError]);
    if (!ready) return { skipped: err.trim().split('\n').pop() || 'anchor exited' };
    return { anchor, ready };
  }

  /**
   * Sends one request line and waits for its answer (null when the anchor has exited), then until
   * the anchor process is idle: OpenBLAS's threads spin for about 2^28 cycles (~0.1 s) after each
   * call, and on a 2-core machine that spinning would take the cores from flockml's next round.
   */
  async request(line: string): Promise<AnchorLine | null> {
    this.child.stdin.write(`${line}\n`);
    const answer = await this.next();
    if (answer) await this.settle();
    return answer;
  }

  /** CPU time (ms, user + system, every thread) the anchor process has used; NaN without /proc. */
  cpuMs(): number {
    try {
      const fields = readFileSync(`/proc/${this.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in 1/100 s ticks
    } catch {
      return Number.NaN;
    }
  }

  /** Resolves once the anchor has used no CPU for 30 ms (at most 2 s). */
  private async settle(): Promise<void> {
    let last = this.cpuMs();
    for (let waited = 0; waited < 2000 && Number.isFinite(last); waited += 30) {
      await new Promise((r) => setTimeout(r, 30));
      const now = this.cpuMs();
      if (now === last) return;
      last = now;
    }
  }

  private async next(): Promise<AnchorLine | null> {
    for (;;) {
      const r = await this.lines.next();
      if (r.done) return null;
      if (r.value.startsWith('{')) return JSON.parse(r.value);
    }
  }

  /** Why the anchor stopped, from its stderr. */
  lastError(): string {
    return this.stderr().trim().split('\n').pop() || 'anchor exited';
  }

  close(): void {
    this.child.stdin.end();
  }
}

/** The environment an anchor runs in: this one, with `--openblas DIR` first on LD_LIBRARY_PATH. */
export function anchorEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  const openblas = openblasDir();
  if (openblas) env.LD_LIBRARY_PATH = [openblas, env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return env;
}

function openblasDir(): string | undefined {
  const i = process.argv.indexOf('--openblas');
  return i >= 0 ? process.argv[i + 1] : process.env.FLOCKML_OPENBLAS_DIR;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b),
    mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
