/**
 * NCCL groups for one process that drives several GPUs itself (ncclCommInitAll): no launcher, no
 * store, one {@link ProcessGroup} per device.
 */
import { native } from '../native';
import { checkOptions } from '../errors';
import { distError } from './errors';
import { ProcessGroup, requireNccl, withinTimeout } from './process_group';

export interface LocalGroupsOptions {
  /** Bound on creating the communicators and on every collective (default 60 000). */
  timeoutMs?: number;
}

/**
 * Creates one nccl {@link ProcessGroup} per CUDA device of this process; group `i` has rank `i`,
 * size `devices.length`, and takes tensors on `cuda:${devices[i]}`.
 *
 * A collective across these groups is formed by calling it on every group, in the same order on
 * each (as ranks of a multi-process job would): the calls queue until every group has posted its
 * next collective, then all of them are launched together (one NCCL group call), so one thread can
 * drive all devices without deadlocking. Until the last group has posted, nothing has run: the
 * collective takes effect, ordered with each device's compute, at the last call.
 *
 *   const groups = await fl.distributed.initLocalGroups([0, 1]);
 *   const works = groups.map((g, i) => g.allReduce(grads[i], { op: 'avg' }));
 *   await Promise.all(works.map((w) => w.wait()));
 *
 * send/recv between these groups are refused (copy with `tensor.to('cuda:N')`). The groups fail
 * together: an error in one, or destroying one, fails pending and later work in all of them, so keep
 * every group alive while any is used.
 *
 * @throws ERR_NCCL (with the reason) where NCCL cannot run, ERR_ARG for a bad device list,
 *   ERR_TIMEOUT when the communicators are not created within `timeoutMs`.
 */
export async function initLocalGroups(devices: number[], options: LocalGroupsOptions = {}): Promise<ProcessGroup[]> {
  checkOptions('distributed.initLocalGroups', options, ['timeoutMs']);
  if (!Array.isArray(devices) || devices.length === 0 || devices.some((d) => !Number.isInteger(d) || d < 0))
    throw distError(
      'ERR_ARG',
      `distributed.initLocalGroups: devices must be a non-empty array of CUDA device indices, got ${JSON.stringify(devices)}`,
    );
  if (new Set(devices).size !== devices.length)
    throw distError('ERR_ARG', `distributed.initLocalGroups: devices must be distinct, got [${devices.join(', ')}]`);
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw distError('ERR_ARG', `distributed.initLocalGroups: timeoutMs must be a positive integer, got ${timeoutMs}`);
  requireNccl('distributed.initLocalGroups');
  const { groups, ready } = native.ncclInitAll(devices, timeoutMs);
  try {
    await withinTimeout(ready, timeoutMs, `distributed.initLocalGroups: ncclCommInitAll over [${devices.join(', ')}]`);
  } catch (e) {
    for (const g of groups) native.pgDestroy(g);
    throw e;
  }
  const ranks = devices.map((_, i) => i);
  return groups.map((g, i) => new ProcessGroup(g, i, ranks, 'nccl', `cuda:${devices[i]}`));
}
