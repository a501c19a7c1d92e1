#!/usr/bin/env node
/**
 * The flockml command line.
 *   flockml launch --nproc-per-node N [--nnodes M --node-rank R --master-addr A --master-port P]
 *                  [--max-restarts K --restart-backoff-ms B] script.ts [args...]
 *   flockml info
 *   flockml build
 *   flockml doctor [--json]
 *   flockml trace merge a.json b.json -o out.json
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch } from '../distributed/launch';
import { packageRoot } from '../native_loader';
import { distError } from '../distributed/errors';
import { didYouMean } from '../errors';

const USAGE = `usage:
  flockml launch --nproc-per-node N [--nnodes M] [--node-rank R] [--master-addr A] [--master-port P]
                 [--max-restarts K] [--restart-backoff-ms B] script [args...]
  flockml info
  flockml --version | --help
  flockml build      compile the native addon from source (needs cmake-js, node-addon-api, cmake, g++)
  flockml doctor [--json]
  flockml trace merge a.json b.json [...] -o out.json`;

function parseLaunch(argv: string[]): Parameters<typeof launch>[0] {
  const opts: Record<string, string> = {};
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('--'); i++) {
    const [flag, inline] = argv[i].slice(2).split('=', 2);
    const value = inline ?? argv[++i];
    if (value === undefined) throw distError('ERR_ARG', `launch: --${flag} needs a value`);
    opts[flag] = value;
  }
  const script = argv[i];
  if (!script) throw distError('ERR_ARG', 'launch: no script given');
  const known = ['nproc-per-node', 'nnodes', 'node-rank', 'master-addr', 'master-port', 'max-restarts', 'restart-backoff-ms'];
  for (const k of Object.keys(opts)) {
    if (known.includes(k)) continue;
    const guess = didYouMean(k, known);
    throw distError('ERR_ARG', `launch: unknown option --${k}${guess ? ` (did you mean --${guess}?)` : ''}`);
  }
  // Absent flags stay undefined: the engine's environment (Slurm, MPI, Kubernetes) fills them in.
  const num = (k: string) => {
    if (opts[k] === undefined) return undefined;
    const v = Number(opts[k]);
    if (!Number.isInteger(v)) throw distError('ERR_ARG', `launch: --${k} must be an integer, got ${opts[k]}`);
    return v;
  };
  return {
    script,
    args: argv.slice(i + 1),
    nprocPerNode: num('nproc-per-node'),
    nnodes: num('nnodes'),
    nodeRank: num('node-rank'),
    masterAddr: opts['master-addr'],
    masterPort: num('master-port'),
    maxRestarts: num('max-restarts'),
    restartBackoffMs: num('restart-backoff-ms'),
  };
}

async function info(): Promise<number> {
  // Loaded lazily: `flockml launch` must work even where the addon is mid-rebuild.
  const { native, addonSource } = await import('../native');
  const build = native.buildInfo();
  const nccl = native.ncclInfo();
  const { detectEngine, readEnv } = await import('../distributed/env');
  const engine = detectEngine();
  let placement: Record<string, unknown> | null = null;
  if (engine) {
    try {
      const e = readEnv();
      placement = {
        rank: e.rank,
        worldSize: e.worldSize,
        localRank: e.localRank,
        masterAddr: e.masterAddr,
        masterPort: e.masterPort,
        token: e.tokenSource,
      };
    } catch (e) {
      placement = { error: (e as Error).message };
    }
  }
  const devices = ['cpu', ...Array.from({ length: native.gpuDeviceCount() }, (_, i) => `cuda:${i} (${native.gpuDeviceName(i)})`)];
  console.log(
    JSON.stringify(
      {
        devices,
        // Which addon was loaded: the prebuilt platform package or a local (source) build.
        addon: addonSource,
        cuda: build.cuda ? { compiled: true, version: build.cudaVersion } : { compiled: false },
        // found: the backend can run here; version: the library's, whenever it loads (even without a GPU).
        nccl: nccl.available
          ? { found: true, version: nccl.version }
          : { found: false, reason: nccl.reason, ...(nccl.version ? { version: nccl.version } : {}) },
        build,
        // The CPU kernels' instruction set: the widest this CPU has, unless FLOCKML_CPU_ISA narrows it.
        cpu: {
          isa: build.cpuIsa,
          detected: build.cpuIsaDetected,
          forced: process.env.FLOCKML_CPU_ISA || null,
          sgemm: build.sgemm,
          threads: build.threads,
        },
        node: process.version,
        // Which engine's variables initProcessGroup would read here, and what they say.
        engine: engine ? { name: engine, ...placement } : null,
      },
      null,
      2,
    ),
  );
  return 0;
}

/**
 * The source build, for where no prebuilt fits (or to compile your own): the published package
 * runs nothing at install time, so this is how an installed copy gets build/Release/flockml.node.
 */
function build(argv: string[]): number {
  if (argv.length > 0) {
    console.error(`flockml build takes no arguments (got ${argv.join(' ')}); set FLOCKML_CUDA=ON|OFF|AUTO to choose CUDA`);
    return 2;
  }
  const root = packageRoot();
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'build_addon.cjs')], { cwd: root, stdio: 'inherit' });
  return r.status ?? 1;
}

const COMMANDS = ['launch', 'info', 'build', 'doctor', 'trace', 'help', 'version'];

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    console.log(USAGE);
    return 0;
  }
  if (cmd === '--version' || cmd === '-v' || cmd === 'version') {
    console.log((JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version);
    return 0;
  }
  if (cmd === 'launch') return launch(parseLaunch(rest));
  if (cmd === 'info') return info();
  if (cmd === 'build') return build(rest);
  if (cmd === 'doctor') {
    const { doctor } = await import('./doctor');
    return doctor(rest);
  }
  if (cmd === 'trace') return (await import('./trace')).trace(rest);
  const guess = didYouMean(cmd.replace(/^-+/, ''), COMMANDS);
  console.error(`flockml: unknown command '${cmd}'${guess ? ` (did you mean '${guess}'?)` : ''}\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(`flockml: ${e.message}`);
    process.exit(2);
  },
);
