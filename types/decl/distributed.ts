/** The process groups and collectives (ring, local, nccl), parameter-server memory (cpp/bindings/distributed.cc). */
import { group, hand } from './dsl';

export const distributedExports = group('distributed', 'process groups and collectives (ring, local, nccl), parameter-server memory', [
  hand(
    'ringListen',
    null,
    '(rank: number, size: number, host: string, timeoutMs: number, name?: string): { group: NativeGroup; port: number }',
    "Binds a listening socket for a ring group now; connect later with the peers' addresses.",
  ),
  hand(
    'ringConnect',
    null,
    '(group: NativeGroup, hosts: string[], ports: number[], shmName?: string, hostOf?: number[]): Promise<void>',
    "Connects to every peer (index = rank) on the group's communication thread. shmName: every rank is on this host; collectives go through that POSIX shared-memory segment (rank 0 creates it).",
  ),
  hand(
    'ringTransport',
    null,
    "(group: NativeGroup): 'shm' | 'shm+tcp' | 'tcp'",
    "How a connected ring group moves collective data: 'shm' (shared memory) or 'tcp'.",
  ),
  hand('pgAllReduce', 'AllReduce', '(group: NativeGroup, t: NativeTensor, op: NativeReduceOp, ordered?: boolean): Promise<ArrayBuffer>'),
  hand('pgBroadcast', 'Broadcast', '(group: NativeGroup, t: NativeTensor, root: number, ordered?: boolean): Promise<ArrayBuffer>'),
  hand(
    'pgAllGather',
    'AllGather',
    '(group: NativeGroup, input: NativeTensor, output: NativeTensor, ordered?: boolean): Promise<ArrayBuffer>',
  ),
  hand(
    'pgReduceScatter',
    'ReduceScatter',
    '(group: NativeGroup, input: NativeTensor, output: NativeTensor, op: NativeReduceOp, ordered?: boolean): Promise<ArrayBuffer>',
  ),
  hand('pgSend', 'Send', '(group: NativeGroup, t: NativeTensor, dst: number, ordered?: boolean): Promise<ArrayBuffer>'),
  hand('pgRecv', 'Recv', '(group: NativeGroup, t: NativeTensor, src: number, ordered?: boolean): Promise<ArrayBuffer>'),
  hand('pgBarrier', 'Barrier', '(group: NativeGroup): Promise<ArrayBuffer>'),
  hand('pgSetTimeout', 'SetTimeout', '(group: NativeGroup, timeoutMs: number): void'),
  hand('pgDestroy', 'Destroy', '(group: NativeGroup): void'),
  hand(
    'ncclInfo',
    null,
    '(): { available: boolean; reason: string; version: string }',
    "available: the nccl backend can run here, else `reason` says why; version: the library's ('' when it does not load).",
  ),
  hand(
    'ncclUniqueId',
    null,
    '(): Uint8Array',
    'A fresh ncclUniqueId (128 bytes); throws ERR_NCCL with the reason where NCCL cannot be used.',
  ),
  hand(
    'ncclInitRank',
    null,
    '(rank: number, size: number, device: number, id: Uint8Array, timeoutMs: number): { group: NativeGroup; ready: Promise<void> }',
    "This process's member of an NCCL group on CUDA `device`; `ready` settles once ncclCommInitRank has finished.",
  ),
  hand(
    'ncclInitAll',
    null,
    '(devices: number[], timeoutMs: number): { groups: NativeGroup[]; ready: Promise<void> }',
    'One group member per device, all in this process (ncclCommInitAll); `ready` settles once all exist.',
  ),
  hand(
    'localInitCpu',
    null,
    '(devices: string[], timeoutMs: number): NativeGroup[]',
    'One in-process group per CPU device (rank i on devices[i]), reducing in shared memory.',
  ),
  hand(
    'psShmCreate',
    null,
    '(name: string, bytes: number): ArrayBuffer',
    "A parameter server's shared memory: a new POSIX object `name` ('/flockml-ps-…') of `bytes`, mapped.",
  ),
  hand(
    'psShmOpen',
    null,
    '(name: string, bytes: number): ArrayBuffer',
    'Maps the existing object `name`, which must have exactly `bytes`.',
  ),
  hand('psShmUnlink', null, '(name: string): void'),
  hand(
    'psReadInto',
    null,
    '(tensors: NativeTensor[], buffer: ArrayBuffer, byteOffset: number): Promise<unknown>',
    "Copies the tensors' bytes (one device), end to end, into `buffer` (from psShmCreate/psShmOpen) from `byteOffset` once their stream gets there.",
  ),
  hand(
    'pgReduce',
    'Reduce',
    '(g: NativeGroup, t: NativeTensor, root: number, op: NativeReduceOp, ordered?: boolean): Promise<ArrayBuffer>',
    'Reduces `t` on group rank `root` only (local CPU groups).',
  ),
]);
