/**
 * The op manifest's declaration type. Every user-visible op is declared once, in one
 * `lib/manifest/<family>.ts` file; `scripts/gen_ops.ts` derives the native op-code enums, the
 * binding's name tables and the native name types from it, and the conformance harness
 * (`test/ops/harness/`) walks it, failing for any op without a case.
 */
import type { DType } from '../dtype';

export type DeviceKind = 'cpu' | 'cuda';

/** How an argument is passed and checked (the rule says, in words, what is refused). */
export type ArgType =
  | 'tensor'
  | 'tensor?'
  | 'tensors'
  | 'tensor|number'
  | 'number'
  | 'int'
  | 'ints'
  | 'int|ints'
  | 'bool'
  | 'dtype'
  | 'string'
  | 'options';

export interface ArgDecl {
  name: string;
  type: ArgType;
  /** The default when omitted; absent means required. */
  default?: unknown;
  /** The validation rule in words, as the error states it ("0 <= k <= size of dim"). */
  rule?: string;
  /**
   * The rule as code, for an op with a generated `kernel`: checked by the generated function and
   * again by the generated native front end, with one message.
   */
  check?: ArgCheck;
}

/**
 * An executable rule: a tensor of at least `minDims` dims; an int naming a dim of the tensor
 * argument `dimOf` (-ndim <= dim < ndim, normalized before the kernel sees it); a value in `range`.
 */
export type ArgCheck = { minDims: number } | { dimOf: string } | { range: readonly [number, number] };

/**
 * An op whose glue is generated from its entry (scripts/gen_kernel_ops.ts): the kernel family's
 * declaration, the native front end and binding, the native type, fl.<name> and t.<name>(). Its
 * kernel takes its tensor arguments, `Tensor& out` (the first input's shape and dtype) and its
 * other arguments in order, then the `fixed` values.
 */
export interface KernelDecl {
  /** Values the op passes the kernel after its own arguments (tril and triu share `triangular` with upper false or true). */
  fixed?: Readonly<Record<string, boolean | number>>;
  /** The kernel's cost per element in adds, for the CPU's inline path (default 1; a math call per element: 64). */
  workPerElement?: number;
}

/**
 * Where the gradient comes from: a formula recorded by the op (naming the inputs that receive a
 * gradient), built from other differentiable ops ("composite"), or none (integer/boolean results).
 */
export type GradDecl = { kind: 'formula'; inputs: string[] } | { kind: 'composite' } | { kind: 'none' };

/**
 * Autocast policy (PyTorch's lists): 'lower' runs in the region's low dtype, 'f32' runs in f32,
 * 'promote' runs in the widest input dtype, 'none' leaves dtypes alone (integer/shape ops).
 */
export type AutocastPolicy = 'lower' | 'f32' | 'promote' | 'none';

export interface OpDecl {
  /** The user's op: `fl.<name>` (and `tensor.<name>()` when `method`). */
  name: string;
  /** Kernel family: the FLOCK_DECLARE_KERNEL name it launches, or 'composite' for ops built from others. */
  family: string;
  /** The op code within an enumerated family (unary, binary, reduce, ...): the native enum member. */
  code?: string;
  args: ArgDecl[];
  /** Dtypes each device accepts; a device left out has no kernel for this op. */
  dtypes: Partial<Record<DeviceKind, readonly DType[]>>;
  /** Output-shape rule: 'same', 'broadcast', 'reduce', or a short phrase ("[..., k] along dim"). */
  shape: string;
  grad: GradDecl;
  autocast: AutocastPolicy;
  /** Installed as a Tensor method too. */
  method?: boolean;
  /** The name of its in-place variant (`add_`), when it has one. */
  inPlace?: string;
  /**
   * Further op codes the op launches, by enumerated kernel family: gelu's 'gelu_tanh' (unary),
   * pow's 'pow_scalar' (unary), linear's activations (bias_act). They extend those families' enums.
   */
  codes?: Readonly<Record<string, readonly string[]>>;
  /** The result's dtype when it is not the (promoted) input dtype: 'bool' for comparisons, 'i64' for indices. */
  output?: 'bool' | 'i64';
  /** The TSDoc of the generated function and method (one paragraph, no comment markers). */
  doc?: string;
  /**
   * The user-facing function is written by hand in lib/ops (its logic is not the family's uniform
   * call), although its family's call shape would let `scripts/gen_ops.ts` generate it.
   */
  custom?: boolean;
  /**
   * The op on f64 scalars, for an element-wise op (unary or binary family): the conformance harness
   * derives a default case from it (inputs in `domain`) when no hand case in test/ops/cases covers the op.
   */
  reference?: (...xs: number[]) => number;
  /** The input range of the derived default case (default [-2, 2]). */
  domain?: readonly [number, number];
  /** Generate everything between this entry and its kernels (see KernelDecl). */
  kernel?: KernelDecl;
}

/**
 * An op code whose kernels exist before any user-visible op launches it (reduce 'prod'); the
 * generator appends these after the codes the ops declare, so an op declaring it later keeps it.
 */
export interface KernelCode {
  family: string;
  code: string;
}

/** Identity with checking by the type: a manifest entry. */
export function op(decl: OpDecl): OpDecl {
  return decl;
}

export const FLOATS = ['f32', 'f64', 'bf16', 'f16'] as const satisfies readonly DType[];
const INTS = ['i32', 'i64', 'u8'] as const satisfies readonly DType[];
export const NUMERIC = [...FLOATS, ...INTS] as const satisfies readonly DType[];
export const ALL = [...NUMERIC, 'bool'] as const satisfies readonly DType[];
