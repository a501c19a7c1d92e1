/**
 * Every error flockml throws: one of three classes, each with a stable `code`.
 *
 * One rule, shared with the native layer (cpp/error.h, `error_kind`), decides the class from the
 * code: a wrong kind of argument (type, dtype, device, a disposed tensor, an unknown option) is a
 * {@link FlockTypeError}; a value outside what is allowed (shapes, indices, ranges, memory) is a
 * {@link FlockRangeError}; everything that goes wrong while running (I/O, peers, devices, autograd
 * misuse) is a {@link FlockError}. All three are `instanceof Error`, and the first two
 * `instanceof TypeError` / `instanceof RangeError`, as Node's own errors are.
 *
 * Messages name the user's op once, then say what was wrong with the shapes, dtypes or devices
 * involved: `conv2d: input must be 4-d [N, C, H, W], got [3, 28, 28]`.
 */

/** Every `code` a flockml error can carry. */
export type ErrorCode =
  | 'ERR_ARG'
  | 'ERR_DTYPE'
  | 'ERR_DEVICE'
  | 'ERR_DISPOSED'
  | 'ERR_SHAPE'
  | 'ERR_INDEX'
  | 'ERR_RANGE'
  | 'ERR_OOM'
  | 'ERR_AUTOGRAD'
  | 'ERR_DATA'
  | 'ERR_IO'
  | 'ERR_FORMAT'
  | 'ERR_NOT_FOUND'
  | 'ERR_STATE_DICT'
  | 'ERR_CUDA'
  | 'ERR_NCCL'
  | 'ERR_TIMEOUT'
  | 'ERR_PEER_LOST'
  | 'ERR_PEER_FAILED'
  | 'ERR_AUTH'
  | 'ERR_STORE'
  | 'ERR_COLLECTIVE_MISMATCH'
  | 'ERR_INTERNAL';

const TYPE_CODES: ReadonlySet<ErrorCode> = new Set(['ERR_ARG', 'ERR_DTYPE', 'ERR_DEVICE', 'ERR_DISPOSED']);
const RANGE_CODES: ReadonlySet<ErrorCode> = new Set(['ERR_SHAPE', 'ERR_INDEX', 'ERR_RANGE', 'ERR_OOM', 'ERR_STATE_DICT']);

/** Which class an error with `code` has: 'type', 'range' or 'error'. */
export function errorKind(code: ErrorCode): 'type' | 'range' | 'error' {
  return TYPE_CODES.has(code) ? 'type' : RANGE_CODES.has(code) ? 'range' : 'error';
}

/** A message as text, as Error makes it, but a Symbol spelled out rather than thrown on. */
function messageText(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined ? '' : String(v);
}

/** A wrong kind of argument: type, dtype, device, disposed tensor, unknown or ill-typed option. */
export class FlockTypeError extends TypeError {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(messageText(message));
    this.code = code;
  }
  override get name(): string {
    return 'TypeError';
  }
}

/** A value outside what is allowed: shapes, indices, numeric ranges, memory. */
export class FlockRangeError extends RangeError {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(messageText(message));
    this.code = code;
  }
  override get name(): string {
    return 'RangeError';
  }
}

/** Something that went wrong while running: I/O, data files, peers, devices, autograd misuse. */
export class FlockError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(messageText(message));
    this.code = code;
  }
}

export type AnyFlockError = FlockTypeError | FlockRangeError | FlockError;

/** The error for `code`, of the class the code decides, from an already formatted message. */
export function errorOf(code: ErrorCode, message: string): AnyFlockError {
  const kind = errorKind(code);
  if (kind === 'type') return new FlockTypeError(code, message);
  if (kind === 'range') return new FlockRangeError(code, message);
  return new FlockError(code, message);
}

/** `op: detail` as an error of the class `code` decides; `op` is named once even if `detail` repeats it. */
export function flockError(code: ErrorCode, op: string, detail: string): AnyFlockError {
  const prefix = `${messageText(op)}: `;
  const text = messageText(detail);
  return errorOf(code, text.startsWith(prefix) ? text : prefix + text);
}

/** Shorthands for the common codes. */
export const argError = (op: string, detail: string): AnyFlockError => flockError('ERR_ARG', op, detail);
export const shapeError = (op: string, detail: string): AnyFlockError => flockError('ERR_SHAPE', op, detail);
export const dtypeError = (op: string, detail: string): AnyFlockError => flockError('ERR_DTYPE', op, detail);
export const outOfRange = (op: string, detail: string): AnyFlockError => flockError('ERR_RANGE', op, detail);

/** Whether `e` is an error flockml made (natively or in TypeScript) with a code. */
export function isFlockError(e: unknown): e is AnyFlockError {
  return e instanceof FlockTypeError || e instanceof FlockRangeError || e instanceof FlockError;
}

/** A short description of a value for messages: `the string "fast"`, `null`, `an array`. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
    case 'number':
    case 'bigint':
    case 'boolean':
      return `${typeof v} ${String(v)}`;
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a Symbol';
    default:
      return `an object${(v as object).constructor?.name && (v as object).constructor !== Object ? ` (${(v as object).constructor.name})` : ''}`;
  }
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length];
}

/** `accepted` of `op`: an array of names (ERR_ARG otherwise). */
function checkNames(op: string, accepted: unknown): readonly string[] {
  if (!Array.isArray(accepted)) throw argError(op, `accepted must be an array of names, got ${describe(accepted)}`);
  const odd = accepted.findIndex((a) => typeof a !== 'string');
  if (odd >= 0) throw argError(op, `accepted[${odd}] must be a name (a string), got ${describe(accepted[odd])}`);
  return accepted;
}

/** The accepted name closest to `name`, when close enough to be a likely typo. */
export function didYouMean(name: string, accepted: readonly string[]): string | undefined {
  if (typeof name !== 'string') throw argError('didYouMean', `name must be a string, got ${describe(name)}`);
  checkNames('didYouMean', accepted);
  let best: string | undefined;
  let bestD = Infinity;
  for (const a of accepted) {
    const d = editDistance(name, a);
    if (d < bestD) [best, bestD] = [a, d];
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/**
 * Checks that `options` is undefined or a plain object whose keys are all in `accepted`; throws
 * ERR_ARG naming the unknown key, a likely intended one and the accepted ones. Returns the options
 * (an empty object for undefined) so callers can destructure.
 */
export function checkOptions<T extends object>(op: string, options: T | undefined | null, accepted: readonly string[]): T {
  checkNames('checkOptions', accepted);
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw argError(op, `options must be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (accepted.includes(key)) continue;
    const guess = didYouMean(key, accepted);
    throw argError(
      op,
      `unknown option '${key}'${guess ? ` (did you mean '${guess}'?)` : ''}; accepted: ${accepted.length ? accepted.join(', ') : 'none'}`,
    );
  }
  return options;
}
