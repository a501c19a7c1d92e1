/**
 * `flockml doctor`: checks what a multi-GPU, multi-node job needs from this host and says what to
 * do about each problem: driver and CUDA runtime, devices and their memory, NCCL, GPU peer access,
 * the interfaces NCCL would use, and the store's port. The addon answers for the build, devices
 * and NCCL; `nvidia-smi` for the driver and the peer matrix, which the CUDA runtime API does not
 * name without a context per device.
 */
import { spawnSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { checkOptions, flockError } from '../errors';

export type CheckStatus = 'ok' | 'info' | 'warn' | 'fail';

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it; present whenever status is warn or fail. */
  advice?: string;
}

export interface DoctorOptions {
  env?: NodeJS.ProcessEnv;
  /** Bound on the store-port probe, ms (default 3000). */
  timeoutMs?: number;
}

function nvidiaSmi(args: string[]): string | null {
  const r = spawnSync('nvidia-smi', args, { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? r.stdout : null;
}

const version = (v: string) => v.split('.').map(Number);
const atLeast = (a: string, b: string) => {
  const x = version(a),
    y = version(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
  return true;
};

function gpuChecks(): Check[] {
  // Lazy: the doctor must still report when the addon does not load.
  let native: typeof import('../native').native;
  try {
    native = require('../native').native;
  } catch (e) {
    return [
      {
        name: 'addon',
        status: 'fail',
        detail: `the native addon does not load: ${(e as Error).message}`,
        advice:
          'rebuild it: npx flockml build (needs cmake-js, node-addon-api, cmake and a C++ compiler; FLOCKML_CUDA=ON with the CUDA toolkit for GPUs)',
      },
    ];
  }
  const checks: Check[] = [];
  const build = native.buildInfo();
  const smi = nvidiaSmi(['--query-gpu=driver_version', '--format=csv,noheader']);
  const header = nvidiaSmi([]);
  const driver = smi?.trim().split('\n')[0]?.trim();
  const driverCuda = header ? /CUDA Version:\s*([\d.]+)/.exec(header)?.[1] : undefined;
  const count = native.gpuDeviceCount();
  if (!build.cuda) {
    checks.push({
      name: 'gpu',
      status: driver ? 'warn' : 'info',
      detail: driver
        ? `this build has no CUDA, but an NVIDIA driver (${driver}) is present`
        : 'no GPU: this build has no CUDA and no NVIDIA driver was found; the ring backend trains on the CPU',
      ...(driver ? { advice: 'rebuild with the CUDA toolkit installed: FLOCKML_CUDA=ON npx flockml build' } : {}),
    });
  } else if (count === 0) {
    checks.push({
      name: 'gpu',
      status: driver ? 'fail' : 'info',
      detail: driver ? `driver ${driver} is present but CUDA sees no device` : 'no GPU: CUDA is compiled in but no NVIDIA driver was found',
      ...(driver
        ? { advice: 'check CUDA_VISIBLE_DEVICES and, in a container, that it runs with the GPUs (--gpus all, nvidia.com/gpu requests)' }
        : {}),
    });
  }
  if (build.cuda) {
    const runtime = build.cudaVersion;
    if (driverCuda && runtime && !atLeast(driverCuda, runtime))
      checks.push({
        name: 'driver',
        status: 'fail',
        detail: `driver ${driver} supports CUDA up to ${driverCuda}, the addon was built with CUDA ${runtime}`,
        advice: `update the NVIDIA driver to one for CUDA ${runtime}, or rebuild the addon with CUDA ${driverCuda}`,
      });
    else if (driver)
      checks.push({ name: 'driver', status: 'ok', detail: `driver ${driver} (CUDA ${driverCuda ?? '?'}), runtime CUDA ${runtime}` });
  }
  for (let i = 0; i < count; i++) {
    const m = native.gpuMemoryInfo(i);
    checks.push({
      name: `cuda:${i}`,
      status: 'ok',
      detail: `${native.gpuDeviceName(i)}, ${(m.total / 2 ** 30).toFixed(1)} GiB, ${(m.free / 2 ** 30).toFixed(1)} GiB free`,
    });
  }
  const nccl = native.ncclInfo();
  if (nccl.available) checks.push({ name: 'nccl', status: 'ok', detail: `NCCL ${nccl.version}` });
  else
    checks.push({
      name: 'nccl',
      status: count > 0 ? 'fail' : 'info',
      detail: `not usable: ${nccl.reason}${nccl.version ? ` (library ${nccl.version} loads)` : ''}`,
      ...(count > 0
        ? {
            advice:
              'install libnccl2 (or the nvidia-nccl-cu12 wheel) and set FLOCKML_NCCL_PATH to libnccl.so.2 if it is not on the loader path',
          }
        : {}),
    });
  if (count > 1) {
    const p2p = nvidiaSmi(['topo', '-p2p', 'r']);
    if (p2p) {
      const blocked = (p2p.match(/\bNS\b|\bCNS\b|\bTNS\b/g) ?? []).length;
      checks.push({
        name: 'peer access',
        status: blocked ? 'warn' : 'ok',
        detail: `\n${p2p.trim()}`,
        ...(blocked
          ? {
              advice:
                'some GPU pairs cannot read each other directly: NCCL goes through host memory between them (slower); check the IOMMU/ACS settings or the topology',
            }
          : {}),
      });
    }
  }
  return checks;
}

/** The interfaces NCCL's socket transport would pick, following NCCL_SOCKET_IFNAME as NCCL reads it. */
export function ncclInterfaces(env: NodeJS.ProcessEnv, ifaces = networkInterfaces()): string[] {
  const names = Object.keys(ifaces).filter((n) => (ifaces[n] ?? []).some((a) => !a.internal || n === 'lo'));
  const spec = env.NCCL_SOCKET_IFNAME;
  if (!spec) return names.filter((n) => n !== 'lo' && !n.startsWith('docker'));
  const exclude = spec.startsWith('^'),
    body = exclude ? spec.slice(1) : spec;
  const exact = body.startsWith('='),
    prefixes = (exact ? body.slice(1) : body).split(',').filter(Boolean);
  const hit = (n: string) => prefixes.some((p) => (exact ? n === p : n.startsWith(p)));
  return names.filter((n) => (exclude ? !hit(n) : hit(n)));
}

function networkCheck(env: NodeJS.ProcessEnv): Check {
  const picked = ncclInterfaces(env);
  if (picked.length === 0)
    return {
      name: 'network',
      status: 'warn',
      detail: `no interface matches${env.NCCL_SOCKET_IFNAME ? ` NCCL_SOCKET_IFNAME=${env.NCCL_SOCKET_IFNAME}` : ' (only loopback or docker)'}`,
      advice: 'single-node jobs are fine; across nodes set NCCL_SOCKET_IFNAME to the interface that reaches the other hosts (ip -br addr)',
    };
  const addrs = networkInterfaces();
  const shown = picked.map((n) => `${n} ${(addrs[n] ?? []).map((a) => a.address).join(' ')}`);
  return { name: 'network', status: 'ok', detail: `NCCL would use: ${shown.join('; ')}` };
}

const isLocal = (host: string) =>
  host === 'localhost' ||
  host.startsWith('127.') ||
  host === '::1' ||
  Object.values(networkInterfaces()).some((as) => (as ?? []).some((a) => a.address === host));

async function storeCheck(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Check> {
  const { DEFAULT_MASTER_PORT } = await import('../distributed/env');
  const host = env.MASTER_ADDR || env.FLOCKML_MASTER_ADDR || '127.0.0.1';
  const port = Number(env.MASTER_PORT || DEFAULT_MASTER_PORT);
  const where = `${host}:${port}`;
  if (isLocal(host)) {
    // This host would run rank 0: the store must be able to listen there.
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
      const s = createServer();
      s.once('error', resolve);
      s.listen(port, host, () => s.close(() => resolve(null)));
    });
    if (!err) return { name: 'store port', status: 'ok', detail: `${where} is free: rank 0 can host the store here` };
    return {
      name: 'store port',
      status: 'fail',
      detail: `${where} cannot be opened: ${err.code ?? err.message}`,
      advice:
        err.code === 'EADDRINUSE'
          ? 'another job (or a leftover rank) holds the port: stop it, or pick another with --master-port / MASTER_PORT'
          : 'pick a port this user may open (above 1023) with --master-port / MASTER_PORT',
    };
  }
  const result = await new Promise<string>((resolve) => {
    const sock = createConnection({ host, port, timeout: timeoutMs });
    const done = (r: string) => {
      sock.destroy();
      resolve(r);
    };
    sock.once('connect', () => done('open'));
    sock.once('timeout', () => done('timeout'));
    sock.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  });
  if (result === 'open') return { name: 'store port', status: 'ok', detail: `${where} answers (rank 0's store is up)` };
  if (result === 'ECONNREFUSED')
    return {
      name: 'store port',
      status: 'info',
      detail: `${host} is reachable but nothing listens on ${port} yet`,
      advice: 'expected before rank 0 starts; if rank 0 runs, check MASTER_PORT matches on every node',
    };
  return {
    name: 'store port',
    status: 'fail',
    detail: `${where}: ${result}`,
    advice: `this host cannot reach rank 0's store: check MASTER_ADDR (${host}) resolves to the first node, and that a firewall allows TCP ${port} and the ring/NCCL ports between nodes`,
  };
}

/** Runs every check. */
export async function diagnose(options: DoctorOptions = {}): Promise<Check[]> {
  checkOptions('doctor', options, ['env', 'timeoutMs']);
  const env = options.env ?? process.env;
  return [...gpuChecks(), networkCheck(env), await storeCheck(env, options.timeoutMs ?? 3000)];
}

const MARK: Record<CheckStatus, string> = { ok: 'ok  ', info: 'info', warn: 'WARN', fail: 'FAIL' };

/** The CLI: prints the checks (or JSON with --json); exit code 1 when any check failed. */
export async function doctor(argv: string[]): Promise<number> {
  const unknown = argv.filter((a) => a !== '--json');
  if (unknown.length) throw flockError('ERR_ARG', 'doctor', `unknown argument ${unknown[0]} (--json)`);
  const checks = await diagnose();
  if (argv.includes('--json')) console.log(JSON.stringify(checks, null, 2));
  else
    for (const c of checks) {
      console.log(`[${MARK[c.status]}] ${c.name}: ${c.detail}`);
      if (c.advice) console.log(`       → ${c.advice}`);
    }
  return checks.some((c) => c.status === 'fail') ? 1 : 0;
}
