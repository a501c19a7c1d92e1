/**
 * A conformance case: how the harness (`test/ops/harness/`) makes inputs for one manifest op,
 * runs it, and what it compares against. Cases live in `test/ops/cases/<family>.ts`, each file
 * exporting `cases: OpCase[]`; the harness fails for any manifest op without one.
 */
import type { DType, Tensor } from '../../../lib/index';

/** f64 values in row-major order with their shape: what references receive and return. */
export interface Arr {
  shape: number[];
  data: Float64Array;
}

export interface InputSpec {
  shape: number[];
  /** 'float' (default): the case's dtype; 'int' → i64; 'bool'; or a fixed dtype. */
  kind?: 'float' | 'int' | 'bool' | DType;
  /** Value range for random inputs (default [-2, 2]; ints: [0, high)). */
  low?: number;
  high?: number;
  /** Fixed values instead of random ones (row-major). */
  values?: number[];
  /** Excluded from the gradient check (indices, masks). Non-float inputs never get one. */
  noGrad?: boolean;
}

export interface OpCase {
  /** The manifest op this case covers. */
  op: string;
  /** A variant's label ("dim=-1, keepdim"). */
  label?: string;
  /** Inputs at the case's default size; `sized(n)` gives them at n for the odd-size sweep (0, 1, 3, 127, 1025). */
  inputs: InputSpec[];
  sized?: (n: number) => InputSpec[];
  /** Runs the op on tensors made from `inputs` (dtype and device chosen by the harness). */
  run: (...xs: Tensor[]) => Tensor | Tensor[];
  /** The op in f64 on plain arrays; the harness compares every output with it. */
  reference: (...xs: Arr[]) => Arr | Arr[];
  /** Dtypes to run (default: the manifest's float dtypes for the device). */
  dtypes?: DType[];
  /** Outputs compared exactly (indices, integer results, booleans). */
  exact?: boolean;
  /** Gradient check (default: the manifest's grad kind is not 'none'). */
  grad?: boolean;
  /** Also run with non-contiguous (transposed-back) inputs (default true when inputs have ≥ 2 dims). */
  nonContiguous?: boolean;
  /** Tolerances by dtype: [rtol, atol]. */
  tol?: Partial<Record<DType, [number, number]>>;
}
