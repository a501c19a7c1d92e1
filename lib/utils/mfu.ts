/**
 * Model FLOPs utilisation: the FLOPs a step needs (see flops.ts) per second, over the device's
 * dense peak. GPU peaks come from the vendors' data sheets (dense, no structured sparsity); the
 * CPU's is measured once per process with a short f32 GEMM, so on the CPU MFU says how close a step
 * comes to this library's own best matmul on this machine.
 */
import { cuda, normalizeDevice, syncSync } from '../device';
import { argError, checkOptions, describe, flockError } from '../errors';
import { randn } from '../ops/creation';
import { matmul } from '../ops/linalg';
import { checkChoice, checkNumber } from '../validate';

export type PeakDType = 'bf16' | 'f16' | 'tf32' | 'f32';
const PEAK_DTYPES: readonly PeakDType[] = ['bf16', 'f16', 'tf32', 'f32'];

interface GpuPeak {
  /** Matched against fl.cuda.deviceName(), first match wins. */
  match: RegExp;
  name: string;
  /** Dense FLOP/s by dtype (f16 equals bf16 on these parts). */
  peak: Record<Exclude<PeakDType, 'f16'>, number>;
}

/** Dense tensor-core peaks (bf16, tf32) and CUDA-core f32 peaks, from the NVIDIA data sheets. */
export const GPU_PEAKS: readonly GpuPeak[] = [
  { match: /H200/i, name: 'H200', peak: { bf16: 989.4e12, tf32: 494.7e12, f32: 66.9e12 } },
  { match: /H100.*(PCIe)/i, name: 'H100 PCIe', peak: { bf16: 756e12, tf32: 378e12, f32: 51.2e12 } },
  { match: /H100/i, name: 'H100 SXM', peak: { bf16: 989.4e12, tf32: 494.7e12, f32: 66.9e12 } },
  { match: /A100/i, name: 'A100', peak: { bf16: 312e12, tf32: 156e12, f32: 19.5e12 } },
];

/** The data-sheet peak for a GPU name and dtype, or undefined for a GPU not in {@link GPU_PEAKS}. */
export function gpuPeakFlops(deviceName: string, dtype: PeakDType): number | undefined {
  if (typeof deviceName !== 'string') throw argError('gpuPeakFlops', `deviceName must be a string, got ${describe(deviceName)}`);
  checkChoice('gpuPeakFlops', 'dtype', dtype, PEAK_DTYPES);
  const gpu = GPU_PEAKS.find((g) => g.match.test(deviceName));
  return gpu?.peak[dtype === 'f16' ? 'bf16' : dtype];
}

const cpuPeaks = new Map<string, number>();

/**
 * The CPU's f32 matmul rate in FLOP/s: the best of a few 512×512×512 products (about 0.3 GFLOP
 * each, a few tens of ms on two cores), measured on first use and cached. With several virtual CPU
 * devices, `device` ('cpu:N') is measured with its own share of the threads.
 */
export function cpuPeakFlops(device: string = 'cpu'): number {
  const d = normalizeDevice(device, 'cpuPeakFlops');
  const known = cpuPeaks.get(d);
  if (known !== undefined) return known;
  const n = 512;
  const a = randn([n, n], { device: d });
  const b = randn([n, n], { device: d });
  let best = Infinity;
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    const c = matmul(a, b);
    syncSync(d);
    if (i > 0) best = Math.min(best, performance.now() - t0); // the first one warms the pool and the packing buffers
    c.dispose();
  }
  a.dispose();
  b.dispose();
  const peak = matmulRate(n, best);
  cpuPeaks.set(d, peak);
  return peak;
}

function matmulRate(n: number, ms: number): number {
  return (2 * n * n * n) / (ms / 1000);
}

/** The peak FLOP/s MFU is measured against on `device` ('cpu', 'cpu:1', 'cuda', 'cuda:1') for `dtype`. */
export function peakFlops(device: string = 'cpu', dtype: PeakDType = 'f32'): number {
  const d = normalizeDevice(device, 'peakFlops');
  checkChoice('peakFlops', 'dtype', dtype, PEAK_DTYPES);
  if (d.startsWith('cpu')) {
    if (dtype !== 'f32') throw argError('peakFlops', `the CPU peak is measured for f32 only, got dtype ${dtype}`);
    return cpuPeakFlops(d);
  }
  const name = cuda.deviceName(Number(d.split(':')[1] ?? 0));
  const peak = gpuPeakFlops(name, dtype);
  if (peak === undefined)
    throw flockError(
      'ERR_DEVICE',
      'peakFlops',
      `no known peak for ${name} (known: ${GPU_PEAKS.map((g) => g.name).join(', ')}); pass peakFlops`,
    );
  return peak;
}

export interface MfuOptions {
  /** FLOPs of one step, e.g. from {@link stepFlops}. */
  flopsPerStep: number;
  /** Milliseconds per step. */
  stepMs: number;
  /** Default 'cpu'. */
  device?: string;
  /** The dtype the products run in (default 'f32'; 'tf32' when TF32 matmuls are on). */
  dtype?: PeakDType;
  /** The peak in FLOP/s, instead of the table or the CPU measurement. */
  peakFlops?: number;
}

/**
 * Model FLOPs utilisation, a fraction in [0, 1] (more only if the peak is wrong):
 * `flopsPerStep / (stepMs / 1000) / peak`.
 */
export function mfu(options: MfuOptions): number {
  const o = checkOptions('mfu', options, ['flopsPerStep', 'stepMs', 'device', 'dtype', 'peakFlops']);
  const flops = checkNumber('mfu', 'flopsPerStep', o.flopsPerStep, { min: 0 });
  const ms = checkNumber('mfu', 'stepMs', o.stepMs, { above: 0 });
  const dtype = checkChoice('mfu', 'dtype', o.dtype ?? 'f32', PEAK_DTYPES);
  const peak = o.peakFlops !== undefined ? checkNumber('mfu', 'peakFlops', o.peakFlops, { above: 0 }) : peakFlops(o.device ?? 'cpu', dtype);
  return flops / (ms / 1000) / peak;
}
