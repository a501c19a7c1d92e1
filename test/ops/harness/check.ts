/**
 * One conformance check each: forward against the f64 reference, the f64 gradient check, CUDA
 * against the CPU. Each returns null when it passes, else what went wrong. Generic over cases:
 * what an op needs is said by its case (test/ops/cases/) and its manifest entry.
 */
import * as fl from '../../../lib/index';
import type { DType, Tensor } from '../../../lib/index';
import type { DeviceKind, OpDecl } from '../../../lib/manifest/index';
import { gradcheck } from '../../helpers/gradcheck';
import { mismatch, tolFor } from './compare';
import { inputDType, isFloatDType, makeInputs, nonContiguous, numel, toArr } from './make';
import type { Arr, InputSpec, OpCase } from './types';

/** The sizes every case with `sized` runs at. */
export const ODD_SIZES = [0, 1, 3, 127, 1025] as const;

export function caseName(c: OpCase): string {
  return c.label ? `${c.op} (${c.label})` : c.op;
}

/** A stable seed per case, so a failure repeats. */
export function seedOf(c: OpCase): number {
  let h = 2166136261;
  for (const ch of caseName(c)) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return h >>> 0;
}

/** The dtypes a case runs in on a device: its own list, else the manifest's floats there (all its dtypes when none is a float). */
export function dtypesFor(c: OpCase, decl: OpDecl, device: DeviceKind): DType[] {
  const declared = decl.dtypes[device] ?? [];
  const list = c.dtypes ?? (declared.some(isFloatDType) ? declared.filter(isFloatDType) : [...declared]);
  return list.filter((d) => declared.includes(d as never));
}

function outputs(r: Tensor | Tensor[]): Tensor[] {
  return Array.isArray(r) ? r : [r];
}

function refOutputs(r: Arr | Arr[]): Arr[] {
  return Array.isArray(r) ? r : [r];
}

function compareAll(got: Tensor[], want: Arr[], c: OpCase, dtype: DType, what: string): string | null {
  if (got.length !== want.length) return `${what}: ${got.length} outputs, reference gives ${want.length}`;
  for (let k = 0; k < want.length; k++) {
    const exact = c.exact || !isFloatDType(got[k].dtype);
    const bad = mismatch(toArr(got[k]), want[k], tolFor(dtype, c.tol), exact);
    if (bad) return `${what}: output ${k} (${got[k].dtype}): ${bad}`;
  }
  return null;
}

const ALL_DTYPES: readonly DType[] = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'];

/**
 * The case in each dtype its manifest entry does not declare for the CPU: the op must refuse it
 * with a flockml error (a code) or compute in a declared dtype (integers promoted to f32, say),
 * never silently in that dtype. Inputs of a fixed kind (indices, masks) keep theirs. Returns the
 * problems found, one per dtype.
 */
export function undeclaredDtypes(c: OpCase, decl: OpDecl): string[] {
  const declared = (decl.dtypes.cpu ?? []) as readonly DType[];
  const problems: string[] = [];
  for (const dtype of ALL_DTYPES.filter((d) => !declared.includes(d))) {
    if (c.inputs.every((s) => inputDType(s, dtype) !== dtype)) continue; // no input takes the dtype
    fl.tidy(() => {
      const inputs = makeInputs(c.inputs, dtype, seedOf(c)).tensors;
      let r: Tensor | Tensor[];
      try {
        r = c.run(...inputs);
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        if (!(typeof code === 'string' && code.startsWith('ERR_'))) problems.push(`${dtype}: threw without a flockml code: ${e}`);
        return;
      }
      try {
        for (const t of outputs(r)) t.dataSync();
      } catch (e) {
        problems.push(`${dtype}: accepted at the call, refused only when its kernel ran (${(e as Error).message}); refuse it at the call`);
        return;
      }
      // An op may hand back an input as it is (dropout when not training): nothing is computed.
      const computed = outputs(r).find((t) => t.dtype === dtype && t.dtype !== decl.output && !inputs.includes(t));
      if (computed)
        problems.push(
          `${dtype}: computed in ${dtype}, which the manifest does not declare for cpu (declare it, or refuse it with ERR_DTYPE)`,
        );
    });
  }
  return problems;
}

/** Forward on the CPU against the reference, on the given inputs (default layout or non-contiguous). */
export function forward(c: OpCase, specs: InputSpec[], dtype: DType, layout: 'default' | 'non-contiguous' = 'default'): string | null {
  const seed = seedOf(c);
  const { tensors, arrs } = makeInputs(specs, dtype, seed);
  const xs = layout === 'default' ? tensors : tensors.map(nonContiguous);
  fl.manualSeed(seed);
  const got = fl.noGrad(() => outputs(c.run(...xs)));
  return compareAll(got, refOutputs(c.reference(...arrs)), c, dtype, layout);
}

/** The float outputs as one tensor (flattened and joined when there are several). */
function joined(r: Tensor | Tensor[]): Tensor {
  const fs = outputs(r).filter((t) => isFloatDType(t.dtype));
  if (fs.length === 1) return fs[0];
  return fl.cat(
    fs.map((t) => t.reshape([-1])),
    0,
  );
}

/** Whether a case gets gradient checks: its own say, else the manifest's grad kind. */
export function wantsGrad(c: OpCase, decl: OpDecl): boolean {
  return c.grad ?? decl.grad.kind !== 'none';
}

/**
 * Central differences cost two forward runs per input element, so the f64 check runs on cases
 * whose inputs hold at most this many elements; larger cases (there for kernel tiling paths) check
 * their backward against the CPU's on CUDA.
 */
export const GRADCHECK_MAX_ELEMENTS = 400;

export function gradcheckFits(c: OpCase): boolean {
  return c.inputs.reduce((a, s) => a + numel(s.shape), 0) <= GRADCHECK_MAX_ELEMENTS;
}

/** f64 central differences against backward(), over the float inputs not marked noGrad. */
export function gradient(c: OpCase): string | null {
  const seed = seedOf(c);
  const { tensors } = makeInputs(c.inputs, 'f64', seed);
  const free = c.inputs.map((s, i) => !s.noGrad && tensors[i].dtype === 'f64');
  if (!free.some(Boolean)) return 'no float input to check the gradient of (mark the case grad: false)';
  const f = (gs: Tensor[]) => {
    let k = 0;
    const xs = tensors.map((t, i) => (free[i] ? gs[k++] : t));
    fl.manualSeed(seed);
    return joined(c.run(...xs));
  };
  return gradcheck(
    f,
    tensors.filter((_, i) => free[i]),
  );
}

/** The same inputs on the CPU and on `device`: outputs agree within the dtype's tolerance (poisoned allocations make unwritten elements NaN). */
export function againstCpu(
  c: OpCase,
  specs: InputSpec[],
  dtype: DType,
  device: string,
  layout: 'default' | 'non-contiguous' = 'default',
): string | null {
  const seed = seedOf(c);
  const { tensors } = makeInputs(specs, dtype, seed);
  const onCpu = layout === 'default' ? tensors : tensors.map(nonContiguous);
  const onDev = tensors.map((t) => t.to(device)).map((t) => (layout === 'default' ? t : nonContiguous(t)));
  fl.manualSeed(seed);
  const want = fl.noGrad(() => outputs(c.run(...onCpu))).map(toArr);
  fl.manualSeed(seed);
  const got = fl.noGrad(() => outputs(c.run(...onDev)));
  for (const t of got) if (t.device !== device) return `output on ${t.device}, expected ${device}`;
  return compareAll(got, want, c, dtype, `${device} vs cpu (${layout})`);
}

/** Backward on `device` against backward on the CPU, from the same inputs and upstream gradient. */
export function gradAgainstCpu(c: OpCase, dtype: DType, device: string): string | null {
  const seed = seedOf(c);
  const { tensors } = makeInputs(c.inputs, dtype, seed);
  const free = c.inputs.map((s, i) => !s.noGrad && isFloatDType(tensors[i].dtype));
  const grads = (dev: string) => {
    const xs = tensors.map((t, i) => {
      const m = dev === 'cpu' ? t.clone() : t.to(dev);
      return free[i] ? m.requiresGrad_() : m;
    });
    fl.manualSeed(seed);
    const y = joined(c.run(...xs));
    fl.manualSeed((seed ^ 1) >>> 0); // >>> 0: seeds of 2^31 and up stay non-negative
    const w = fl.randn([...y.shape], { dtype: y.dtype }).to(dev); // drawn on the CPU: the same weights for both
    y.mul(w).sum().backward();
    return xs.filter((_, i) => free[i]).map((x) => (x.grad ? toArr(x.grad) : null));
  };
  const want = grads('cpu'),
    got = grads(device);
  for (let k = 0; k < want.length; k++) {
    const g = got[k],
      w = want[k];
    if (!g || !w) {
      if (g || w) return `gradient ${k}: present on one device only`;
      continue;
    }
    const bad = mismatch(g, w, tolFor(dtype, c.tol));
    if (bad) return `${device} vs cpu gradient ${k}: ${bad}`;
  }
  return null;
}
