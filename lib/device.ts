/** Devices: 'cpu' and 'cuda:N'. */
import { native } from './native';

export type Device = 'cpu' | `cuda:${number}` | 'cuda';

export function normalizeDevice(d: unknown, op = 'device'): string {
  if (d === undefined) return 'cpu';
  if (typeof d !== 'string')
    throw Object.assign(new TypeError(`${op}: device must be a string like 'cpu' or 'cuda:0'`), { code: 'ERR_DEVICE' });
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

/**
 * How many queued CPU kernels {@link ready} lets stand: several steps of a small model, so the
 * worker never runs dry while the JS thread takes its event-loop turn, yet far below the queue's
 * bound (1024), so an awaiting loop never blocks in an op call.
 */
const READY_LOW_WATERMARK = 128;

/**
 * The back-pressure point of a training loop: resolves once the host may queue more work, on a new
 * event-loop turn (a macrotask, so timers, I/O and finalizers run). The DataLoader's async
 * iterator awaits it before each batch; a custom loop awaits it once per step.
 *
 * On the CPU it waits until at most 128 kernels are queued. A CUDA stream has no host queue to
 * measure: each call marks a point in the stream and resolves once the work queued up to the
 * previous call's point has finished, so the host runs at most about one step ahead of the GPU.
 * Without `device`, every device this thread has used must be ready. The wait is signalled by
 * the device's own thread, never polled.
 */
export async function ready(device?: string): Promise<void> {
  await native.ready(device === undefined ? null : normalizeDevice(device, 'ready'), READY_LOW_WATERMARK);
  await new Promise<void>((resolve) => setImmediate(resolve));
}
