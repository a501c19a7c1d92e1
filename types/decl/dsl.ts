/**
 * How the addon's exports are declared (types/decl/<group>.ts, one group per bindings file). Each
 * export is declared once; `npm run gen:ops` (scripts/gen_native.ts) writes from the declarations:
 *
 *   types/native.ts                    the NativeAddon interface (every export, typed and documented)
 *   cpp/generated/bindings.h           the hand-written binding functions, declared
 *   cpp/generated/bindings_<group>.cc  the bindings of `fn` entries: argument unpacking and
 *                                      re-validation, the core call, the result's conversion
 *   cpp/generated/exports.cc           the registration of every export (FLOCK_EXPORT)
 *
 * A `fn` entry is generated end to end from its arguments; a `hand` entry's binding is written in
 * cpp/bindings/<group>.cc (promises, callbacks, objects built field by field) and only its type
 * and registration come from here. An op with a kernel declares its native entry in its manifest
 * entry instead (lib/manifest/, `kernel`).
 */

/** 2^48: the bound of sizes, offsets and shifts (far beyond any tensor; exact in a double). */
export const BIG = 2 ** 48;
/** The bound of dims and their counts (a tensor has at most 64 dims here). */
export const MAX_DIM = 64;
/** JS integers are exact up to 2^53 − 1: Philox seeds and offsets. */
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** An argument of a generated binding: how JS passes it, and how the binding checks it. */
export type NativeArg =
  | { kind: 'tensor'; name: string; evenFailed?: boolean }
  | { kind: 'tensor?'; name: string }
  | { kind: 'tensors'; name: string }
  | { kind: 'number'; name: string; default?: number; range?: readonly [number, number] }
  | { kind: 'int'; name: string; lo: number; hi: number; default?: number }
  | { kind: 'bool'; name: string; default?: boolean }
  | { kind: 'string'; name: string }
  | { kind: 'ints'; name: string; lo: number; hi: number; maxLen?: number }
  | { kind: 'dims' | 'shape'; name: string }
  | { kind: 'dtype'; name: string }
  | { kind: 'device'; name: string }
  | { kind: 'enum'; name: string; family: EnumFamily; default?: number }
  | { kind: 'choice'; name: string; names: readonly string[]; default?: string; enum?: string };

/** The op-code enums generated from the manifest (cpp/generated/<family>_codes.h). */
export type EnumFamily = 'unary' | 'binary' | 'reduce' | 'random' | 'bias_act';

/** What a generated binding returns: a new tensor, several, nothing, or a plain value. */
export type NativeResult = 'tensor' | 'tensors' | 'void' | 'bool' | 'number';

export interface FnDecl {
  kind: 'fn';
  name: string;
  doc?: string;
  args: readonly NativeArg[];
  result: NativeResult;
  /** The C++ call, `$name` for each argument; default `ops::<snake_name>($a, $b, ...)`. */
  call?: string;
  /** The TypeScript result type, when `result` alone does not say it (`[NewTensor, NewTensor]`). */
  ts?: string;
}

export interface HandDecl {
  kind: 'hand';
  name: string;
  /** The C++ function in cpp/bindings/<group>.cc (default: the name with a capital). */
  binding: string;
  /** The TypeScript signature without the name: `(x: NativeTensor): NewTensor`, or `: T` for a property. */
  ts: string;
  doc?: string;
}

/** A property of the addon object, set when it loads (cpp/bindings/module.cc): typed here, not registered. */
export interface PropDecl {
  kind: 'prop';
  name: string;
  ts: string;
  doc?: string;
}

export type NativeDecl = FnDecl | HandDecl | PropDecl;

export interface NativeGroup {
  /** The bindings file: cpp/bindings/<name>.cc (and cpp/generated/bindings_<name>.cc for its fn entries). */
  name: string;
  /** What the group holds, for the comment above it in types/native.ts. */
  doc: string;
  decls: readonly NativeDecl[];
  /** The core headers its generated bindings call into (default ../ops/ops.h), relative to cpp/generated/. */
  includes?: readonly string[];
}

const capital = (s: string) => s[0].toUpperCase() + s.slice(1);

/** An export whose binding is written by hand; `binding` defaults to the name with a capital. */
export function hand(name: string, binding: string | null, ts: string, doc?: string): HandDecl {
  return { kind: 'hand', name, binding: binding ?? capital(name), ts, doc };
}

/** A property the addon sets when it loads. */
export function prop(name: string, ts: string, doc?: string): PropDecl {
  return { kind: 'prop', name, ts, doc };
}

/** A generated export. */
export function fn(
  name: string,
  args: readonly NativeArg[],
  result: NativeResult,
  more: Partial<Pick<FnDecl, 'doc' | 'call' | 'ts'>> = {},
): FnDecl {
  return { kind: 'fn', name, args, result, ...more };
}

export function group(name: string, doc: string, decls: readonly NativeDecl[], includes?: readonly string[]): NativeGroup {
  return { name, doc, decls, ...(includes ? { includes } : {}) };
}

// Argument constructors.
export const tensor = (name: string): NativeArg => ({ kind: 'tensor', name });
export const tensorOrNull = (name: string): NativeArg => ({ kind: 'tensor?', name });
export const tensors = (name: string): NativeArg => ({ kind: 'tensors', name });
export const number = (name: string, more: { default?: number; range?: readonly [number, number] } = {}): NativeArg => ({
  kind: 'number',
  name,
  ...more,
});
export const int = (name: string, lo: number, hi: number, more: { default?: number } = {}): NativeArg => ({
  kind: 'int',
  name,
  lo,
  hi,
  ...more,
});
/** A dim of a tensor: -64 <= dim < 64 (the front end normalizes it against the tensor's rank). */
export const dim = (name = 'dim'): NativeArg => int(name, -MAX_DIM, MAX_DIM);
export const bool = (name: string, more: { default?: boolean } = {}): NativeArg => ({ kind: 'bool', name, ...more });
export const string = (name: string): NativeArg => ({ kind: 'string', name });
export const ints = (name: string, lo: number, hi: number, maxLen?: number): NativeArg => ({ kind: 'ints', name, lo, hi, maxLen });
export const dims = (name: string): NativeArg => ({ kind: 'dims', name });
export const shape = (name: string): NativeArg => ({ kind: 'shape', name });
export const dtype = (name = 'dtype'): NativeArg => ({ kind: 'dtype', name });
export const device = (name = 'device'): NativeArg => ({ kind: 'device', name });
export const opCode = (family: EnumFamily, name = 'op'): NativeArg => ({ kind: 'enum', name, family });
/**
 * One of `names`, passed on as its index (an int) to the call, or as that member of the C++ enum
 * `enum` (whose `count` must equal the number of names: a static_assert says so).
 */
export const choice = (name: string, names: readonly string[], more: { default?: string; enum?: string } = {}): NativeArg => ({
  kind: 'choice',
  name,
  names,
  ...more,
});
