/**
 * Groups for one process that drives several devices itself: no launcher, no store, one
 * {@link ProcessGroup} per device. On CUDA devices they are NCCL communicators (ncclCommInitAll);
 * on virtual CPU devices ('cpu:N', see fl.setCpuDeviceCount) the devices' streams meet in shared
 * memory and reduce there, each device reducing a slice with its own threads (backend 'local').
 */
import { native } from '../native';
import { checkOptions } from '../errors';
import { normalizeDevice } from '../device';
import { distError } from './errors';
import { ProcessGroup, requireNccl, withinTimeout } from './process_group';

export interface LocalGroupsOptions {
  /** Bound on creating the communicators and on every collective's wait for the other devices (default 60 000). */
  timeoutMs?: number;
}

/**
 * Creates one {@link ProcessGroup} per device of this process; group `i` has rank `i`, size
 * `devices.length`, and takes tensors on `devices[i]`. Devices are strings, all CPU
 * (`['cpu:0', 'cpu:1']`) or all CUDA (`['cuda:0', 'cuda:1']`); numbers mean CUDA device indices.
 *
 * A collective across these groups is formed by calling it on every group, in the same order on
 * each (as ranks of a multi-process job would):
 *
 *   const groups = await fl.distributed.initLocalGroups(['cpu:0', 'cpu:1']);
 *   const works = groups.map((g, i) => g.allReduce(grads[i], { op: 'avg' }));
 *   await Promise.all(works.map((w) => w.wait()));
 *
 * On CPU devices each call returns at once and queues the collective on its device's stream: it
 * runs after the work queued there before the call, and work queued there after the call runs only
 * once the collective has finished on that device. A device whose call never comes fails the
 * others with ERR_TIMEOUT naming it after `timeoutMs`, and the groups are unusable from then on.
 * Mismatched calls (another collective, dtype, element count, op or root) fail every device with
 * ERR_COLLECTIVE_MISMATCH before any data moves. CPU groups also offer `reduce(t, root)`.
 * A device's stream waits at the collective until every device has posted, so post on every group
 * before the host waits on one of the devices (`await fl.ready()`, `await work.wait()`, a read, or
 * a device queue filled past its bound of 1024 ops), or the wait lasts until the timeout.
 *
 * On CUDA devices the calls queue until every group has posted its next collective, then all of
 * them are launched together (one NCCL group call), so one thread can drive all devices without
 * deadlocking. Until the last group has posted, nothing has run: the collective takes effect,
 * ordered with each device's compute, at the last call.
 *
 * send/recv between these groups are refused (copy with `tensor.to(device)`). The groups fail
 * together: an error in one, or destroying one, fails pending and later work in all of them, so keep
 * every group alive while any is used.
 *
 * @throws ERR_NCCL (with the reason) where NCCL cannot run, ERR_ARG for a bad or duplicated device
 *   list, ERR_DEVICE for a device that does not exist or a list mixing CPU and CUDA devices,
 *   ERR_TIMEOUT when the communicators are not created within `timeoutMs`.
 */
export async function initLocalGroups(devices: (number | string)[], options: LocalGroupsOptions = {}): Promise<ProcessGroup[]> {
  const op = 'distributed.initLocalGroups';
  checkOptions(op, options, ['timeoutMs']);
  if (!Array.isArray(devices) || devices.length === 0)
    throw distError(
      'ERR_ARG',
      `${op}: devices must be a non-empty array of devices ('cpu:0', 'cuda:1') or CUDA device indices, got ${JSON.stringify(devices)}`,
    );
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw distError('ERR_ARG', `${op}: timeoutMs must be a positive integer, got ${timeoutMs}`);
  const named = devices.map((d) => {
    if (typeof d === 'number') {
      if (!Number.isInteger(d) || d < 0) throw distError('ERR_ARG', `${op}: a CUDA device index must be a non-negative integer, got ${d}`);
      return `cuda:${d}`;
    }
    if (typeof d !== 'string')
      throw distError('ERR_ARG', `${op}: devices must be strings or CUDA device indices, got ${JSON.stringify(d)}`);
    return normalizeDevice(d, op);
  });
  const seen = new Set<string>();
  for (const d of named) {
    if (seen.has(d)) throw distError('ERR_ARG', `${op}: devices must be distinct, got [${named.join(', ')}] (${d} twice)`);
    seen.add(d);
  }
  const cpu = named.filter((d) => d.startsWith('cpu'));
  if (cpu.length > 0 && cpu.length < named.length)
    throw distError('ERR_DEVICE', `${op}: devices must be all CPU or all CUDA devices, got [${named.join(', ')}]`);
  const ranks = named.map((_, i) => i);
  if (cpu.length > 0) {
    const groups = native.localInitCpu(named, timeoutMs);
    return groups.map((g, i) => new ProcessGroup(g, i, ranks, 'local', named[i]));
  }
  const indices = named.map((d) => Number(d.slice('cuda:'.length)));
  requireNccl(op);
  const { groups, ready } = native.ncclInitAll(indices, timeoutMs);
  try {
    await withinTimeout(ready, timeoutMs, `${op}: ncclCommInitAll over [${indices.join(', ')}]`);
  } catch (e) {
    for (const g of groups) native.pgDestroy(g);
    throw e;
  }
  return groups.map((g, i) => new ProcessGroup(g, i, ranks, 'nccl', named[i]));
}
