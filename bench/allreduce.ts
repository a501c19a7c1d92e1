/**
 * Allreduce bandwidth of the ring backend on 2 and 4 local ranks, 4 KB .. 256 MB (f32), over each
 * transport (shared memory, TCP, and hierarchical: the ranks split into 2 hosts by FLOCKML_HOST_ID,
 * shared memory within each and TCP between them, as on 2 machines), printing JSON lines
 * {"bench":"allreduce","backend":"ring-shm"|"ring-tcp"|"ring-shm+tcp"|"gloo","ranks","bytes","ms","algbw_gbps","busbw_gbps"}
 * with nccl-tests' definitions (algbw = bytes / time, busbw = algbw x 2(n-1)/n). The hierarchical
 * mode ('hier') runs where the ranks split into 2 hosts of 2 or more (4 ranks: 2 x 2).
 *
 * The same sweep with PyTorch's gloo backend (bench/anchors/torch_allreduce.py, Debian
 * python3-torch) runs in the same command, alternating with ours round by round, so that both
 * see the same machine: on a shared host the speed drifts by tens of percent over a minute. Each
 * line's ms is the median over rounds of each round's median time ("rounds" says how many).
 *   npm run bench -- allreduce [--ranks 2,4] [--transports shm,tcp,hier] [--min-bytes N] [--max-bytes N] [--rounds R] [--no-anchor]
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { launch } from '../lib/distributed/launch';
import { stringFlag } from './shared/args';

interface Line {
  bench: string;
  backend: string;
  ranks: number;
  bytes: number;
  iters: number;
  ms: number;
  wrong: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b),
    mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

const parse = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));

/** 'hier': the ranks act as 2 hosts (allreduce_worker.ts sets FLOCKML_HOST_ID from BENCH_HOSTS) and the transport is chosen as across machines. */
async function ring(n: number, transport: string, minBytes: string, maxBytes: string): Promise<Line[]> {
  let out = '';
  const mode = transport === 'hier' ? { BENCH_HOSTS: '2', FLOCKML_TRANSPORT: 'auto' } : { FLOCKML_TRANSPORT: transport };
  const code = await launch({
    script: join(__dirname, 'allreduce_worker.ts'),
    nprocPerNode: n,
    masterPort: 20000 + Math.floor(Math.random() * 20000),
    env: { BENCH_MIN_BYTES: minBytes, BENCH_MAX_BYTES: maxBytes, ...mode },
    // rank 0's lines, without the launcher's [0] prefix
    stdout: {
      write: (s: string) => {
        out += s.replace(/^\[0\] /, '');
        return true;
      },
    } as NodeJS.WritableStream,
  });
  if (code !== 0) process.exit(code);
  return parse(out);
}

function gloo(n: number, minBytes: string, maxBytes: string): Line[] | null {
  const r = spawnSync(
    '/usr/bin/python3',
    [join(__dirname, 'anchors', 'torch_allreduce.py'), '--ranks', String(n), '--min-bytes', minBytes, '--max-bytes', maxBytes],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) {
    console.error(`gloo anchor not run (${(r.stderr || r.error?.message || '').trim().split('\n').pop()}); --no-anchor skips it`);
    return null;
  }
  return parse(r.stdout);
}

async function main(): Promise<void> {
  const ranks = stringFlag('ranks', '2,4').split(',').map(Number);
  const minBytes = stringFlag('min-bytes', '4096'),
    maxBytes = stringFlag('max-bytes', String(256 << 20));
  const rounds = Number(stringFlag('rounds', '3'));
  const transports = stringFlag('transports', 'shm,tcp,hier').split(',');
  for (const t of transports) if (!['shm', 'tcp', 'hier'].includes(t)) throw new Error(`--transports: '${t}' is not one of shm, tcp, hier`);
  let anchor = !process.argv.includes('--no-anchor');
  for (const n of ranks) {
    const seen = new Map<string, Line[]>();
    const add = (lines: Line[]) =>
      lines.forEach((l) => seen.set(`${l.backend} ${l.bytes}`, [...(seen.get(`${l.backend} ${l.bytes}`) ?? []), l]));
    for (let r = 0; r < rounds; r++) {
      for (const transport of transports)
        if (transport !== 'hier' || (n >= 4 && n % 2 === 0)) add(await ring(n, transport, minBytes, maxBytes));
        else if (r === 0) console.error(`allreduce: hier needs an even number of ranks, 4 or more, to split into 2 hosts; skipped on ${n}`);
      if (anchor) {
        const lines = gloo(n, minBytes, maxBytes);
        if (lines) add(lines);
        else anchor = false;
      }
    }
    for (const lines of seen.values()) {
      const { backend, bytes, iters } = lines[0];
      const ms = median(lines.map((l) => l.ms));
      const algbw = bytes / (ms / 1e3) / 1e9;
      console.log(
        JSON.stringify({
          bench: 'allreduce',
          backend,
          ranks: n,
          bytes,
          rounds: lines.length,
          iters,
          ms: +ms.toFixed(3),
          algbw_gbps: +algbw.toFixed(3),
          busbw_gbps: +((algbw * 2 * (n - 1)) / n).toFixed(3),
          wrong: lines.reduce((a, l) => a + l.wrong, 0),
        }),
      );
    }
  }
}

void main();
