/** The typed contract of the native addon (build/Release/flockml.node): every export. */

/**
 * A tensor handle: a number naming a slot of the addon's table (cpp/bindings/tensor_handle.h),
 * held by a Tensor, which disposes it.
 */
export type NativeTensor = number & { readonly __nativeTensor: unique symbol };

/**
 * A handle an op just returned: wrap it in a Tensor (lib/ops/util.ts `wrap`) or dispose it. A
 * number has no finalizer, so one dropped on the floor would hold its memory until the process
 * ends; the type keeps it from being passed on to another op unwrapped.
 */
export type NewTensor = number & { readonly __newTensor: unique symbol };

/** The frozen metadata of a handle, shared by handles of one shape, dtype and device. */
export interface HandleMeta {
  readonly shape: readonly number[];
  readonly dtype: NativeDType;
  readonly device: string;
}

export type NativeDType = 'f32' | 'f64' | 'i32' | 'i64' | 'u8' | 'bool' | 'bf16' | 'f16';

// The op-code names come from the op manifest (lib/manifest/, npm run gen:ops).
export type { UnaryOpName, BinaryOpName, ReduceOpName, RandomKind, BiasActivation } from './op_codes';
import type { UnaryOpName, BinaryOpName, ReduceOpName, RandomKind, BiasActivation } from './op_codes';

export interface DeviceMemoryStats {
  tensors: number;
  bytes: number;
  peakBytes: number;
  storages: number;
  /** Released memory kept for reuse (the CPU keeps blocks of 256 KiB and up; see emptyCache). */
  cachedBytes: number;
}

export interface NativeAddon {
  /**
   * [metadata index, handle] of the handle an op returned last: `metas[returned[0]]` is its
   * metadata while `returned[1]` is that handle.
   */
  readonly returned: Float64Array;
  readonly metas: readonly HandleMeta[];
  // creation
  empty(shape: number[], dtype: NativeDType, device: string): NewTensor;
  full(shape: number[], dtype: NativeDType, device: string, value: number): NewTensor;
  fromBuffer(data: ArrayBufferView | ArrayBuffer, shape: number[], dtype: NativeDType, device: string): NewTensor;
  arange(start: number, end: number, step: number, dtype: NativeDType, device: string): NewTensor;
  linspace(start: number, end: number, steps: number, dtype: NativeDType, device: string): NewTensor;
  oneHot(index: NativeTensor, numClasses: number): NewTensor;
  random(
    kind: RandomKind,
    shape: number[],
    dtype: NativeDType,
    device: string,
    seed: number,
    offset: number,
    a: number,
    b: number,
  ): NewTensor;
  // handles
  meta(t: NativeTensor | NewTensor): HandleMeta;
  isDisposed(t: NativeTensor | NewTensor): boolean;
  dispose(t: NativeTensor | NewTensor | readonly (NativeTensor | NewTensor)[]): void;
  // sync points
  read(t: NativeTensor): Promise<ArrayBuffer>;
  readSync(t: NativeTensor): ArrayBuffer;
  sync(device: string): Promise<void>;
  /** Resolves with one float64: when the device's stream reached this point (ms since the Unix epoch). */
  syncTime(device: string): Promise<ArrayBuffer>;
  syncSync(device: string): void;
  /**
   * Resolves once `device`'s stream (null: every stream created so far) lets the host queue more:
   * a CPU queue at or below `lowWatermark` tasks; a CUDA stream once the work before the previous
   * ready call has finished. Resolved at once when already so; rejects with a failed stream's error.
   */
  ready(device: string | null, lowWatermark: number): Promise<void>;
  /**
   * A ticket queued on `device`'s stream behind everything queued so far: 'ran' once it ran,
   * 'dropped' when a failed stream dropped it (so was everything queued with it), 'queued' before.
   */
  streamTicket(device: string): NativeTicket;
  ticketState(t: NativeTicket): 'queued' | 'ran' | 'dropped';
  /**
   * The error of the op whose failure left `t` never computed, or null; `known` once the JS
   * thread has been told (a rejected sync point): ops reading `t` then throw it.
   */
  tensorFailure(t: NativeTensor): { code: string; message: string; known: boolean } | null;
  /** Every stream's failures so far are known to the user (a strategy reporting a failed step). */
  acknowledgeFailures(): void;
  /** Test hook: the (n+1)-th storage allocation from now fails with ERR_OOM; -1 turns it off. */
  failAllocAfter(n: number): void;
  /** How many small kernels `device`'s stream has run on this thread because its worker was idle with nothing queued. */
  streamInlineTasks(device: string): number;
  /**
   * Diagnostic for tests: `threads` threads queue `tasks` tasks each on CPU `device`'s stream while
   * this thread queues `tasks` and tries to run one inline after each (blocking until all ran).
   * `overlaps`: tasks that ran while another did; `overtaken`: inline tasks that ran before one this
   * thread queued earlier. Both must be 0.
   */
  streamGateStress(
    device: string,
    threads: number,
    tasks: number,
  ): { overlaps: number; overtaken: number; inlineRan: number; queuedRan: number };
  /**
   * Diagnostic for tests: runs `regions` parallel regions of the intra-op pool on this thread (one
   * in five of `n` items, the rest of 1 to 7) while `busyThreads` threads spin. `missed`/`repeated`:
   * items run no time or more than once; `stale`: items run outside their region. All must be 0.
   */
  poolRegionStress(regions: number, n: number, busyThreads: number): { missed: number; repeated: number; stale: number; threads: number };
  // runtime
  memory(): Record<string, DeviceMemoryStats>;
  emptyCache(device: string): number;
  resetPeakMemory(device: string): void;
  /** Every native error is made with these constructors (`new C(code, message)`), by kind. */
  setErrorClasses(typeError: NativeErrorClass, rangeError: NativeErrorClass, error: NativeErrorClass): void;
  numThreads(): number;
  setNumThreads(n: number): void;
  buildInfo(): {
    cuda: boolean;
    cudaVersion: string;
    sgemm: string;
    bf16gemm: string;
    threads: number;
    /** The instruction set CPU kernels use (FLOCKML_CPU_ISA may narrow it) and the widest this CPU has. */
    cpuIsa: string;
    cpuIsaDetected: string;
    /** True in the CUDA simulator's addon (FLOCKML_CUDA=SIM): its CUDA devices are simulated. */
    cudaSim: boolean;
  };
  /** The CUDA simulator's device state as JSON (contexts, memory, streams); undefined on real GPUs. */
  cudaSimState(): string | undefined;
  /** The simulator's fault-injection plan (`cudaMallocAsync:7,...`; '' clears it); ERR_DEVICE on real GPUs. */
  cudaSimFail(spec: string): void;
  gpuDeviceCount(): number;
  gpuDeviceName(index: number): string;
  gpuMemoryInfo(index: number): { free: number; total: number };
  /** fl.backends.cuda.allowTF32, kept per addon instance and read when a matmul is queued. */
  allowTF32(): boolean;
  setAllowTF32(allow: boolean): void;
  // ops
  unary(op: UnaryOpName | number, x: NativeTensor, a?: number, b?: number): NewTensor;
  unaryBackward(op: UnaryOpName | number, x: NativeTensor, grad: NativeTensor, a?: number, b?: number): NewTensor;
  binary(op: BinaryOpName | number, a: NativeTensor, b: NativeTensor): NewTensor;
  /** self = self op b in place (arithmetic, same dtype, b broadcasting to self); false when b overlaps self other than element for element. */
  binary_(op: BinaryOpName | number, self: NativeTensor, b: NativeTensor): boolean;
  /** Every element of self set to value, in place (ERR_RANGE when an integer dtype cannot hold it). */
  fill_(self: NativeTensor, value: number): void;
  where(cond: NativeTensor, a: NativeTensor, b: NativeTensor): NewTensor;
  cast(x: NativeTensor, dtype: NativeDType): NewTensor;
  clone(x: NativeTensor): NewTensor;
  copy_(dst: NativeTensor, src: NativeTensor): void;
  to(x: NativeTensor, device: string): NewTensor;
  reduce(op: ReduceOpName | number, x: NativeTensor, dims: number[], keepdim: boolean, correction?: number): NewTensor;
  softmax(x: NativeTensor, dim: number, log: boolean): NewTensor;
  matmul(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean): NewTensor;
  /** op(a)·op(b) with the values of casting f32 operands to `compute`, multiplying and casting the result to `out`. */
  matmulLowered(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean, compute: string, out: string): NewTensor;
  /**
   * out += op(a)·op(b) (2-D), computed as matmul, or matmulLowered with `compute`, computes it, bit for
   * bit as adding the product afterwards; false, with nothing queued, where that takes two passes.
   */
  matmulInto(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean, out: NativeTensor, compute: string | null): boolean;
  reshape(x: NativeTensor, shape: number[]): NewTensor;
  narrow(x: NativeTensor, dim: number, start: number, length: number): NewTensor;
  permute(x: NativeTensor, dims: number[]): NewTensor;
  expand(x: NativeTensor, shape: number[]): NewTensor;
  cat(xs: NativeTensor[], dim: number): NewTensor;
  /** Rows of x along dim; `op` names the caller in errors (default 'indexSelect'). */
  indexSelect(x: NativeTensor, dim: number, index: NativeTensor, op?: 'indexSelect' | 'embedding'): NewTensor;
  /** `op` names the caller in errors (default 'gather'). */
  gather(x: NativeTensor, dim: number, index: NativeTensor, op?: 'gather' | 'nllLoss'): NewTensor;
  scatterAdd(x: NativeTensor, dim: number, index: NativeTensor, src: NativeTensor): NewTensor;
  // nn (cpp/bindings/nn.cc): geometry as [h, w] pairs
  conv2d(
    x: NativeTensor,
    w: NativeTensor,
    stride: number[],
    padding: number[],
    dilation: number[],
    groups: number,
    bias?: NativeTensor | null,
  ): NewTensor;
  conv2dBackwardInput(
    grad: NativeTensor,
    w: NativeTensor,
    inputShape: number[],
    stride: number[],
    padding: number[],
    dilation: number[],
    groups: number,
  ): NewTensor;
  conv2dBackwardWeight(
    x: NativeTensor,
    grad: NativeTensor,
    weightShape: number[],
    stride: number[],
    padding: number[],
    dilation: number[],
    groups: number,
  ): NewTensor;
  maxPool2d(
    x: NativeTensor,
    kernel: number[],
    stride: number[],
    padding: number[],
    dilation: number[],
    ceilMode: boolean,
    countIncludePad: boolean,
  ): [NewTensor, NewTensor];
  maxPool2dBackward(
    grad: NativeTensor,
    indices: NativeTensor,
    inputShape: number[],
    kernel: number[],
    stride: number[],
    padding: number[],
    dilation: number[],
    ceilMode: boolean,
    countIncludePad: boolean,
  ): NewTensor;
  avgPool2d(
    x: NativeTensor,
    kernel: number[],
    stride: number[],
    padding: number[],
    dilation: number[],
    ceilMode: boolean,
    countIncludePad: boolean,
  ): NewTensor;
  avgPool2dBackward(
    grad: NativeTensor,
    inputShape: number[],
    kernel: number[],
    stride: number[],
    padding: number[],
    dilation: number[],
    ceilMode: boolean,
    countIncludePad: boolean,
  ): NewTensor;
  adaptiveAvgPool2d(x: NativeTensor, outputSize: number[]): NewTensor;
  adaptiveAvgPool2dBackward(grad: NativeTensor, inputShape: number[]): NewTensor;
  /** Fused log-softmax + NLL over [rows, classes]: [per-row loss, per-row logsumexp]. */
  crossEntropy(x: NativeTensor, target: NativeTensor, ignoreIndex: number, labelSmoothing: number): [NewTensor, NewTensor];
  crossEntropyBackward(
    x: NativeTensor,
    target: NativeTensor,
    lse: NativeTensor,
    grad: NativeTensor,
    ignoreIndex: number,
    labelSmoothing: number,
  ): NewTensor;
  /** Layer norm of each row of [rows, d], affine fused (weight, bias [d] or null): [y, mean [rows], rstd [rows]]. */
  layerNorm(x: NativeTensor, weight: NativeTensor | null, bias: NativeTensor | null, eps: number): [NewTensor, NewTensor, NewTensor];
  /** [dx, dweight or null, dbias or null]; the parameter gradients are column sums in the same kernel. */
  layerNormBackward(
    x: NativeTensor,
    mean: NativeTensor,
    rstd: NativeTensor,
    weight: NativeTensor | null,
    grad: NativeTensor,
    weightGrad: boolean,
    biasGrad: boolean,
  ): [NewTensor, NewTensor | null, NewTensor | null];
  /** act(x + bias) over x [rows, n] and bias [n]: the fused epilogue of linear; with `inPlace`, written into x (the result aliases x). */
  biasAct(x: NativeTensor, bias: NativeTensor, activation: BiasActivation, inPlace?: boolean): NewTensor;
  /** grad · act'(saved + bias), or act'(saved) without bias (relu may pass its output as saved). */
  biasActBackward(grad: NativeTensor, saved: NativeTensor, bias: NativeTensor | null, activation: BiasActivation): NewTensor;
  /** In-place fused Adam/AdamW over many tensors, queued on their device's stream; maxExpAvgSq is empty unless amsgrad. */
  adamStep(
    params: NativeTensor[],
    grads: NativeTensor[],
    expAvg: NativeTensor[],
    expAvgSq: NativeTensor[],
    maxExpAvgSq: NativeTensor[],
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    weightDecay: number,
    step: number,
    decoupled: boolean,
    amsgrad: boolean,
    maximize: boolean,
    /** f32 master weights of bf16/f16 params (empty for f32/f64 params). */
    masters: NativeTensor[],
    /** Round the bf16/f16 copies stochastically, with Philox counters from (seed, offset). */
    stochasticRounding: boolean,
    seed: number,
    offset: number,
  ): void;
  gradNorm(tensors: NativeTensor[], normType: number): NewTensor;
  clipByNorm(tensors: NativeTensor[], total: NativeTensor, maxNorm: number): void;
  sgdStep(
    params: NativeTensor[],
    grads: NativeTensor[],
    momentumBuffers: NativeTensor[],
    lr: number,
    momentum: number,
    dampening: number,
    weightDecay: number,
    nesterov: boolean,
    firstStep: boolean,
    maximize: boolean,
    masters: NativeTensor[],
    stochasticRounding: boolean,
    seed: number,
    offset: number,
  ): void;
  /** In-place fused RMSprop over many tensors; gradAvg is empty unless centered, momentumBuffers unless momentum > 0. */
  rmspropStep(
    params: NativeTensor[],
    grads: NativeTensor[],
    squareAvg: NativeTensor[],
    gradAvg: NativeTensor[],
    momentumBuffers: NativeTensor[],
    lr: number,
    alpha: number,
    eps: number,
    weightDecay: number,
    momentum: number,
    centered: boolean,
    maximize: boolean,
    masters: NativeTensor[],
    stochasticRounding: boolean,
    seed: number,
    offset: number,
  ): void;
  /** In-place fused Adagrad over many tensors sharing one step count (≥ 1). */
  adagradStep(
    params: NativeTensor[],
    grads: NativeTensor[],
    sums: NativeTensor[],
    lr: number,
    lrDecay: number,
    eps: number,
    weightDecay: number,
    step: number,
    maximize: boolean,
    masters: NativeTensor[],
    stochasticRounding: boolean,
    seed: number,
    offset: number,
  ): void;
  /** GradScaler's fused unscale: tensors *= invScale in place; foundInf (0-d f32) set to 1 on any inf/NaN. */
  ampUnscale(tensors: NativeTensor[], foundInf: NativeTensor, invScale: number): void;
}

// ---- distributed (cpp/bindings/distributed.cc) ----
/** A native process group; opaque to TypeScript. */
export interface NativeGroup {
  readonly __nativeGroup: unique symbol;
}
export type NativeReduceOp = 'sum' | 'avg' | 'max' | 'min' | 'prod';

export interface NativeAddon {
  /** Binds a listening socket for a ring group now; connect later with the peers' addresses. */
  ringListen(rank: number, size: number, host: string, timeoutMs: number, name?: string): { group: NativeGroup; port: number };
  /**
   * Connects to every peer (index = rank) on the group's communication thread. shmName: every rank
   * is on this host; collectives go through that POSIX shared-memory segment (rank 0 creates it).
   */
  ringConnect(group: NativeGroup, hosts: string[], ports: number[], shmName?: string, hostOf?: number[]): Promise<void>;
  /** How a connected ring group moves collective data: 'shm' (shared memory) or 'tcp'. */
  ringTransport(group: NativeGroup): 'shm' | 'shm+tcp' | 'tcp';
  pgAllReduce(group: NativeGroup, t: NativeTensor, op: NativeReduceOp, ordered?: boolean): Promise<ArrayBuffer>;
  pgBroadcast(group: NativeGroup, t: NativeTensor, root: number, ordered?: boolean): Promise<ArrayBuffer>;
  pgAllGather(group: NativeGroup, input: NativeTensor, output: NativeTensor, ordered?: boolean): Promise<ArrayBuffer>;
  pgReduceScatter(
    group: NativeGroup,
    input: NativeTensor,
    output: NativeTensor,
    op: NativeReduceOp,
    ordered?: boolean,
  ): Promise<ArrayBuffer>;
  pgSend(group: NativeGroup, t: NativeTensor, dst: number, ordered?: boolean): Promise<ArrayBuffer>;
  pgRecv(group: NativeGroup, t: NativeTensor, src: number, ordered?: boolean): Promise<ArrayBuffer>;
  pgBarrier(group: NativeGroup): Promise<ArrayBuffer>;
  pgSetTimeout(group: NativeGroup, timeoutMs: number): void;
  pgDestroy(group: NativeGroup): void;
  /** available: the nccl backend can run here, else `reason` says why; version: the library's ('' when it does not load). */
  ncclInfo(): { available: boolean; reason: string; version: string };
  /** A fresh ncclUniqueId (128 bytes); throws ERR_NCCL with the reason where NCCL cannot be used. */
  ncclUniqueId(): Uint8Array;
  /** This process's member of an NCCL group on CUDA `device`; `ready` settles once ncclCommInitRank has finished. */
  ncclInitRank(rank: number, size: number, device: number, id: Uint8Array, timeoutMs: number): { group: NativeGroup; ready: Promise<void> };
  /** One group member per device, all in this process (ncclCommInitAll); `ready` settles once all exist. */
  ncclInitAll(devices: number[], timeoutMs: number): { groups: NativeGroup[]; ready: Promise<void> };
  /** A parameter server's shared memory: a new POSIX object `name` ('/flockml-ps-…') of `bytes`, mapped. */
  psShmCreate(name: string, bytes: number): ArrayBuffer;
  /** Maps the existing object `name`, which must have exactly `bytes`. */
  psShmOpen(name: string, bytes: number): ArrayBuffer;
  psShmUnlink(name: string): void;
  /** Copies the tensors' bytes (one device), end to end, into `buffer` (from psShmCreate/psShmOpen) from `byteOffset` once their stream gets there. */
  psReadInto(tensors: NativeTensor[], buffer: ArrayBuffer, byteOffset: number): Promise<unknown>;
}

// ---- safetensors (cpp/bindings/io.cc) ----
/** One tensor's entry in a safetensors header; begin/end are byte offsets within the data section. */
export interface NativeTensorInfo {
  name: string;
  dtype: NativeDType;
  shape: number[];
  begin: number;
  end: number;
}

/** A validated header, plus the tensors read (`names[i]` is `handles[i]`'s entry name). */
export interface NativeReadResult {
  headerBytes: number;
  dataBytes: number;
  metadata: Record<string, string>;
  tensors: NativeTensorInfo[];
  names: string[];
  handles: NewTensor[];
}

export interface NativeAddon {
  /** Writes a safetensors file atomically after the tensors' producers have run; resolves once it is durable. */
  ioSave(path: string, names: string[], tensors: NativeTensor[], metadata: Record<string, string>): Promise<void>;
  ioSaveSync(path: string, names: string[], tensors: NativeTensor[], metadata: Record<string, string>): void;
  /** Reads the header and the named tensors (all for null, none for []) onto `device`, on a worker thread. */
  ioRead(path: string, device: string, names: string[] | null): Promise<NativeReadResult>;
  ioReadSync(path: string, device: string, names: string[] | null): NativeReadResult;
}

export type NativeErrorClass = new (code: never, message: string) => Error;

// ---- profiler (cpp/bindings/profiler.cc) ----
/** Stream intervals recorded since the last drain, as columns: `times` holds (enqueue, start, end) per record, µs since the Unix epoch. */
export interface NativeProfilerRecords {
  ops: string[];
  streams: string[];
  times: Float64Array;
}

export interface NativeAddon {
  /** Starts recording every task's interval on every stream, discarding earlier records. */
  profilerStart(): void;
  profilerStop(): void;
  profilerEnabled(): boolean;
  /** Moves out the records so far; waits for CUDA timing events of recorded work. */
  profilerDrain(): NativeProfilerRecords;
  /** The profiler's clock: µs since the Unix epoch. */
  profilerNow(): number;
  /** Opens a named range on the device timeline (NVTX where CUDA is compiled in). */
  profilerRangePush(name: string): void;
  profilerRangePop(): void;
}

// ---- devices and events (cpp/bindings/devices.cc); local CPU groups (cpp/bindings/distributed.cc) ----
/** An event on a CPU device's stream (an External). */
export interface NativeTicket {
  readonly __brand: 'NativeTicket';
}

export interface NativeEvent {
  readonly __brand: 'NativeEvent';
}

export interface NativeAddon {
  /** The number of virtual CPU devices; the first call fixes it. */
  cpuDeviceCount(): number;
  /** Sets the count before it is fixed; ERR_DEVICE afterwards. */
  setCpuDeviceCount(n: number): void;
  /** An event set once the work queued on `device` (a CPU device) so far has run. */
  eventRecord(device: string): NativeEvent;
  /** Work queued on `device` after this call waits for the event. */
  eventWait(e: NativeEvent, device: string): void;
  eventQuery(e: NativeEvent): boolean;
  /** Resolves once the event is set. */
  eventSync(e: NativeEvent): Promise<void>;
  /** One in-process group per CPU device (rank i on devices[i]), reducing in shared memory. */
  localInitCpu(devices: string[], timeoutMs: number): NativeGroup[];
  /** Reduces `t` on group rank `root` only (local CPU groups). */
  pgReduce(g: NativeGroup, t: NativeTensor, root: number, op: NativeReduceOp, ordered?: boolean): Promise<ArrayBuffer>;
}

export interface NativeAddon {
  /**
   * Fused scaled dot-product attention on q [b, tq, d], k [b, tk, d], v [b, tk, dv]; the mask (bool:
   * true attends, or additive in q's dtype) is [mask batch, 1 | tq, 1 | tk], element (bi, i, j) at
   * batch (bi / maskDivisor) % maskPeriod. Returns [out [b, tq, dv], logsumexp [b, tq]].
   */
  attention(
    q: NativeTensor,
    k: NativeTensor,
    v: NativeTensor,
    mask: NativeTensor | null,
    maskDivisor: number,
    maskPeriod: number,
    isCausal: boolean,
    scale: number,
    dropoutP: number,
    seed: number,
    offset: number,
  ): [NewTensor, NewTensor];
  /** Gradients [gq, gk, gv] of {@link attention}, recomputing the scores from the saved logsumexp. */
  attentionBackward(
    q: NativeTensor,
    k: NativeTensor,
    v: NativeTensor,
    out: NativeTensor,
    lse: NativeTensor,
    grad: NativeTensor,
    mask: NativeTensor | null,
    maskDivisor: number,
    maskPeriod: number,
    isCausal: boolean,
    scale: number,
    dropoutP: number,
    seed: number,
    offset: number,
  ): [NewTensor, NewTensor, NewTensor];
  /**
   * Self-attention over a packed projection qkv ([n, len, 3·embed] when batchFirst, else
   * [len, n, 3·embed]; f32, bf16 or f16, CPU) split into `heads` heads in place; the mask as for
   * {@link attention} with batch (n, head). Returns [out [n, len, embed] or [len, n, embed], logsumexp [n·heads, len]].
   */
  attentionPacked(
    qkv: NativeTensor,
    heads: number,
    batchFirst: boolean,
    mask: NativeTensor | null,
    maskDivisor: number,
    maskPeriod: number,
    isCausal: boolean,
    scale: number,
    dropoutP: number,
    seed: number,
    offset: number,
  ): [NewTensor, NewTensor];
  /** The gradient of qkv (qkv's shape) of {@link attentionPacked}. */
  attentionPackedBackward(
    qkv: NativeTensor,
    out: NativeTensor,
    lse: NativeTensor,
    grad: NativeTensor,
    heads: number,
    batchFirst: boolean,
    mask: NativeTensor | null,
    maskDivisor: number,
    maskPeriod: number,
    isCausal: boolean,
    scale: number,
    dropoutP: number,
    seed: number,
    offset: number,
  ): NewTensor;
}

// ---- rearranging ops (cpp/bindings/rearrange.cc) ----
export interface NativeAddon {
  /** tril (upper false) or triu (upper true) over the last two dims, relative to `diagonal`. */
  triangular(x: NativeTensor, diagonal: number, upper: boolean): NewTensor;
  /** A copy with the given dims reversed. */
  flip(x: NativeTensor, dims: number[]): NewTensor;
  /** A copy rolled by `shifts[i]` along `dims[i]` (equal lengths). */
  roll(x: NativeTensor, shifts: number[], dims: number[]): NewTensor;
}

export type ScatterReduceName = 'sum' | 'prod' | 'mean' | 'amax' | 'amin';

/** Scan, sort, scatter, select and sample ops (cpp/bindings/select_ops.cc). */
export interface NativeAddon {
  /** cumsum (prod false) or cumprod along dim, from the end when `reverse`; integers and bool give i64. */
  scan(x: NativeTensor, dim: number, prod: boolean, reverse: boolean): NewTensor;
  cumprodBackward(x: NativeTensor, grad: NativeTensor, dim: number): NewTensor;
  /** Stable sort along dim: [values, indices (i64)]. */
  sort(x: NativeTensor, dim: number, descending: boolean): [NewTensor, NewTensor];
  topk(x: NativeTensor, k: number, dim: number, largest: boolean): [NewTensor, NewTensor];
  scatter(x: NativeTensor, dim: number, index: NativeTensor, src: NativeTensor): NewTensor;
  scatterReduce(
    x: NativeTensor,
    dim: number,
    index: NativeTensor,
    src: NativeTensor,
    reduce: ScatterReduceName,
    includeSelf: boolean,
  ): NewTensor;
  /** `count`: the number of true elements of the broadcast bool mask. */
  maskedSelect(x: NativeTensor, mask: NativeTensor, count: number): NewTensor;
  /** [count, ndim] i64 coordinates of a bool mask's true elements. */
  nonzero(mask: NativeTensor, count: number): NewTensor;
  /** probs [rows, categories] → [rows, numSamples] i64, from Philox counters at (seed, offset). */
  multinomial(probs: NativeTensor, numSamples: number, replacement: boolean, seed: number, offset: number): NewTensor;
}

/** Recurrent layers (cpp/bindings/rnn.cc): one layer and direction per call. */
export type RnnMode = 'rnn_tanh' | 'rnn_relu' | 'lstm' | 'gru';

export interface NativeAddon {
  /**
   * Every step of one layer and direction: gx [T, B, G] (the input projection), weightHh [G, H],
   * biasHh [G], h0 [B, H], c0 [B, H] (LSTM only). [states, saved]: states [T+1, B, H] (LSTM
   * [2, T+1, B, H], c the second plane) with step t in slot t+1 (reversed: slot t) and h0 in slot 0
   * (reversed: T); saved [T, B, 4H] for LSTM and GRU when `save`, else null.
   */
  rnnForward(
    mode: RnnMode,
    gx: NativeTensor,
    weightHh: NativeTensor,
    biasHh: NativeTensor | null,
    h0: NativeTensor,
    c0: NativeTensor | null,
    reverse: boolean,
    save: boolean,
  ): [NewTensor, NewTensor | null];
  /** [dgx, dweightHh, dbiasHh, dh0, dc0], each null unless asked for (dgx always). */
  rnnBackward(
    mode: RnnMode,
    grad: NativeTensor,
    states: NativeTensor,
    saved: NativeTensor | null,
    weightHh: NativeTensor,
    reverse: boolean,
    wantWeight: boolean,
    wantBias: boolean,
    wantH0: boolean,
    wantC0: boolean,
  ): [NewTensor, NewTensor | null, NewTensor | null, NewTensor | null, NewTensor | null];
}
