/** Devices: 'cpu' and 'cuda:N'. */
import { native } from './native';

export type Device = 'cpu' | `cuda:${number}` | 'cuda';

export function normalizeDevice(d: unknown, op = 'device'): string {
  if (d === undefined) return 'cpu';
  if (typeof d !== 'string') throw Object.assign(new TypeError(`${op}: device must be a string like 'cpu' or 'cuda:0'`), { code: 'ERR_DEVICE' });
  if (d === 'cuda') return 'cuda:0';
  if (d === 'cpu' || /^cuda:\d{1,3}$/.test(d)) return d;
  throw Object.assign(new TypeError(`${op}: invalid device '${d}': expected 'cpu' or 'cuda:N'`), { code: 'ERR_DEVICE' });
}

/** CUDA queries; all report "no GPU" on machines without a driver or device. */
export const cuda = {
  isAvailable(): boolean {
    return native.gpuDeviceCount() > 0;
  },
  deviceCount(): number {
    return native.gpuDeviceCount();
  },
  deviceName(index = 0): string {
    return native.gpuDeviceName(index);
  },
  memoryInfo(index = 0): { free: number; total: number } {
    return native.gpuMemoryInfo(index);
  },
  /** flockml's own accounting for `cuda:index`: live tensors, bytes held, peak bytes. */
  memoryStats(index = 0): { tensors: number; bytes: number; peakBytes: number; storages: number } {
    const stats = native.memory()[`cuda:${index}`];
    if (!stats) throw Object.assign(new TypeError(`memoryStats: no CUDA device ${index}`), { code: 'ERR_DEVICE' });
    return stats;
  },
};

/** Resolves once every stream of `device` (default: the CPU) has run all work queued so far. */
export function sync(device: string = 'cpu'): Promise<void> {
  return native.sync(normalizeDevice(device, 'sync'));
}

/** Blocking twin of {@link sync}, for scripts and tests. */
export function syncSync(device: string = 'cpu'): void {
  native.syncSync(normalizeDevice(device, 'syncSync'));
}
