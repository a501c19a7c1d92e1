/**
 * Devices: 'cpu', 'cpu:N' and 'cuda:N'. The host can appear as several virtual CPU devices
 * (FLOCKML_CPU_DEVICES=N or {@link setCpuDeviceCount}), cpu:0 ... cpu:N-1, each with its own
 * stream and a share of the intra-op threads, so multi-device code runs and is tested without GPUs.
 * 'cpu' is cpu:0, and that is how tensors on it report their device.
 */
import { native } from './native';
import { argError, describe, errorOf, flockError, outOfRange } from './errors';

export type Device = 'cpu' | `cpu:${number}` | `cuda:${number}` | 'cuda';

// A typo in FLOCKML_CPU_DEVICES fails the import, not the first kernel that asks for the count.
const envDevices = process.env.FLOCKML_CPU_DEVICES;
if (envDevices !== undefined && envDevices !== '' && !/^(?:[1-9]|1[0-6])$/.test(envDevices))
  throw errorOf('ERR_DEVICE', `FLOCKML_CPU_DEVICES must be an integer from 1 to 16, got '${envDevices}'`);

/** The canonical spelling of a device: 'cpu' for 'cpu' and 'cpu:0', 'cuda:0' for 'cuda'; ERR_DEVICE otherwise. */
export function normalizeDevice(d: unknown, op = 'device'): string {
  if (d === undefined) return 'cpu';
  if (typeof d !== 'string')
    throw flockError('ERR_DEVICE', op, `device must be a string like 'cpu', 'cpu:1' or 'cuda:0', got ${describe(d)}`);
  if (d === 'cuda') return 'cuda:0';
  if (d === 'cpu' || /^cuda:\d{1,3}$/.test(d)) return d;
  const cpu = /^cpu:(\d{1,3})$/.exec(d);
  if (cpu) {
    const index = Number(cpu[1]);
    if (index === 0) return 'cpu';
    const n = native.cpuDeviceCount();
    if (index >= n)
      throw flockError(
        'ERR_DEVICE',
        op,
        `device '${d}' is out of range: this process has ${n} CPU device${n === 1 ? '' : 's'} ` +
          `(cpu:0 to cpu:${n - 1}; set FLOCKML_CPU_DEVICES or fl.setCpuDeviceCount for more)`,
      );
    return `cpu:${index}`;
  }
  throw flockError('ERR_DEVICE', op, `invalid device '${d}': expected 'cpu', 'cpu:N' or 'cuda:N'`);
}

/** Whether two device strings name the same device ('cpu' and 'cpu:0' do). */
export function sameDevice(a: string, b: string): boolean {
  return normalizeDevice(a, 'sameDevice') === normalizeDevice(b, 'sameDevice');
}

/** The index of a device: 0 for 'cpu', N for 'cpu:N' and 'cuda:N'. */
export function deviceIndex(d: string): number {
  const n = normalizeDevice(d, 'deviceIndex');
  const colon = n.indexOf(':');
  return colon < 0 ? 0 : Number(n.slice(colon + 1));
}

/** The number of virtual CPU devices (FLOCKML_CPU_DEVICES, default 1). Asking fixes the count. */
export function cpuDeviceCount(): number {
  return native.cpuDeviceCount();
}

/**
 * Makes the host appear as `n` CPU devices (1 to 16), cpu:0 ... cpu:n-1, each with its own stream
 * and max(1, threads / n) intra-op threads. Call it before the first tensor op; once the devices
 * are in use it throws ERR_DEVICE (FLOCKML_CPU_DEVICES=n does the same from the environment).
 */
export function setCpuDeviceCount(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 16)
    throw flockError('ERR_DEVICE', 'setCpuDeviceCount', `the count must be an integer from 1 to 16, got ${describe(n)}`);
  native.setCpuDeviceCount(n);
}

/** Every CPU device of this process: ['cpu'] by default, ['cpu', 'cpu:1', ...] with several. */
export function cpuDevices(): string[] {
  return Array.from({ length: native.cpuDeviceCount() }, (_, i) => (i === 0 ? 'cpu' : `cpu:${i}`));
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
    // Not validate's checkInt: validate imports this file.
    if (typeof index !== 'number') throw argError('memoryStats', `index must be an integer ≥ 0, got ${describe(index)}`);
    if (!Number.isInteger(index) || index < 0) throw outOfRange('memoryStats', `index must be an integer ≥ 0, got ${index}`);
    const stats = native.memory()[`cuda:${index}`];
    if (!stats) throw flockError('ERR_DEVICE', 'memoryStats', `no CUDA device ${index}`);
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

/**
 * A point in a CPU device's stream, for ordering work across devices without the host waiting
 * (as CUDA events do between GPU streams). `tensor.to('cpu:N')` already orders itself this way;
 * an Event orders anything else, e.g. a stage that reads what another device wrote in place:
 *
 *   const e = fl.Event.record('cpu:0'); // after the work queued on cpu:0 so far
 *   e.wait('cpu:1');                    // work queued on cpu:1 from now on runs after that point
 *   await e.synchronize();              // or await it on the host
 *
 * CUDA devices are refused with ERR_DEVICE: their work is ordered through their own streams.
 */
export class Event {
  readonly device: string;
  readonly #h: ReturnType<typeof native.eventRecord>;

  private constructor(device: string) {
    this.device = normalizeDevice(device, 'Event.record');
    this.#h = native.eventRecord(this.device);
  }

  /** Records an event after the work queued on `device` so far. */
  static record(device: string = 'cpu'): Event {
    return new Event(device);
  }

  /** Makes the work queued on `device` from now on wait until this event is reached. Returns at once. */
  wait(device: string): void {
    native.eventWait(this.#h, normalizeDevice(device, 'Event.wait'));
  }

  /** Whether the stream has reached the event. */
  query(): boolean {
    return native.eventQuery(this.#h);
  }

  /** Resolves once the stream has reached the event; the JS thread is never blocked. */
  synchronize(): Promise<void> {
    return native.eventSync(this.#h);
  }
}
