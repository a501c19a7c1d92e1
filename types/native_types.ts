/** The types the addon's exports take and return (types/native.ts declares the exports themselves). */

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

export interface DeviceMemoryStats {
  tensors: number;
  bytes: number;
  peakBytes: number;
  storages: number;
  /** Released memory kept for reuse (the CPU keeps blocks of 256 KiB and up; see emptyCache). */
  cachedBytes: number;
}

// ---- distributed (cpp/bindings/distributed.cc) ----
/** A native process group; opaque to TypeScript. */
export interface NativeGroup {
  readonly __nativeGroup: unique symbol;
}
export type NativeReduceOp = 'sum' | 'avg' | 'max' | 'min' | 'prod';

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

export type NativeErrorClass = new (code: never, message: string) => Error;

// ---- profiler (cpp/bindings/profiler.cc) ----
/** Stream intervals recorded since the last drain, as columns: `times` holds (enqueue, start, end) per record, µs since the Unix epoch. */
export interface NativeProfilerRecords {
  ops: string[];
  streams: string[];
  times: Float64Array;
}

// ---- devices and events (cpp/bindings/devices.cc); local CPU groups (cpp/bindings/distributed.cc) ----
/** An event on a CPU device's stream (an External). */
export interface NativeTicket {
  readonly __brand: 'NativeTicket';
}

export interface NativeEvent {
  readonly __brand: 'NativeEvent';
}

export type ScatterReduceName = 'sum' | 'prod' | 'mean' | 'amax' | 'amin';

/** Recurrent layers (cpp/bindings/rnn.cc): one layer and direction per call. */
export type RnnMode = 'rnn_tanh' | 'rnn_relu' | 'lstm' | 'gru';
