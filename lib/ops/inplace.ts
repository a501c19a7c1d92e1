/**
 * In-place ops (add_, sub_, mul_, div_, clamp_, fill_, zero_, copy_, uniform_, normal_) with
 * PyTorch's rules. The new values are computed out of place, checked (the result must keep self's
 * shape, and its dtype must cast to self's: no float into an integer tensor, nothing but bool into
 * bool), then copied into self's storage, which self shares with its views; the storage's version
 * counter is bumped, so a node that saved self refuses to run backward afterwards. add_, sub_, mul_
 * and div_ of a floating tensor by one of its dtype, outside autograd, skip the copy: the kernel
 * writes into self ({@link writesDirectly}), and so does fill_ (zero_) outside autograd.
 *
 * Autograd: a leaf that requires grad cannot be written outside noGrad. A non-leaf's history is
 * rebased as PyTorch does: the op is recorded with an edge to a stand-in for self's old value (a
 * copy when the op's gradient reads it), and self takes the op's node as its gradFn. Writing into a
 * view while autograd tracks the write would need the base's history rebased too (PyTorch's
 * CopySlices); that is refused with ERR_AUTOGRAD.
 */
import { native } from '../native';
import type { Tensor, TensorLike } from '../tensor';
import { isGradEnabled, noGrad } from '../dispatch/grad_mode';
import { record } from '../dispatch/record';
import { baseOf, bumpVersions } from '../dispatch/version';
import { type CanonicalDType, checkValueFits, isFloating } from '../dtype';
import { describe, flockError } from '../errors';
import { checkNumber } from '../validate';
import { castTo, checkTensor, rangeError, shapeStr, sumTo, typeError, wrap } from './util';
import * as ew from './elementwise';
import { expand } from './shape';
import { rand, randn } from './creation';
import { sum } from './reduce';

/** The tensor among an op's operands (numbers have no autograd state). */
const tensorOf = (v: TensorLike): Tensor | null => (typeof v === 'object' && v !== null ? v : null);

/** PyTorch's canCast: no floating value into an integer tensor, no non-bool into a bool tensor. */
function canCast(from: CanonicalDType, to: CanonicalDType): boolean {
  if (isFloating(from) && !isFloating(to)) return false;
  return to !== 'bool' || from === 'bool';
}

/** The binary kernels that can write `self op= other` straight into self. */
type DirectOp = 'add' | 'sub' | 'mul' | 'div';

/** Whether a tensor of shape `from` broadcasts to `to` without changing it. */
function broadcastsTo(from: readonly number[], to: readonly number[]): boolean {
  if (from.length > to.length) return false;
  const lead = to.length - from.length;
  return from.every((s, i) => s === 1 || s === to[lead + i]);
}

/**
 * Runs `self op= other` with the binary kernel writing into self (one pass, no temporary) when
 * other is a tensor of self's floating dtype and device that broadcasts to self's shape; false
 * when the general path must run (also when the native side finds other a view of part of self's
 * storage).
 */
function writesDirectly(code: DirectOp, self: Tensor, other: TensorLike): boolean {
  if (typeof other !== 'object' || other === null) return false;
  if (other.dtype !== self.dtype || other.device !== self.device || !isFloating(self.dtype)) return false;
  return broadcastsTo(other.shape, self.shape) && native.binary_(code, self.handle, other.handle);
}

/**
 * Runs `compute(before)` and writes its result into `self`. `before` stands for self's value
 * before the write; `readsBefore` says whether the recorded gradient reads its values (then it is
 * a copy, else an alias). `inputs` are the other tensors the result depends on. `direct`, tried
 * first when autograd does not record the write, writes the result into self itself and says
 * whether it did. Exported for the other in-place ops written elsewhere (setIndex, indexPut_).
 */
export function inPlace(
  op: string,
  self: Tensor,
  inputs: (Tensor | null)[],
  readsBefore: boolean,
  compute: (before: Tensor) => Tensor,
  anyCast = false,
  direct?: () => boolean,
): Tensor {
  checkTensor(op, 'self', self);
  const tracked = isGradEnabled() && (self.requiresGrad || inputs.some((t) => t?.requiresGrad));
  if (!tracked && direct?.()) {
    bumpVersions(op, [self]);
    return self;
  }
  if (tracked && self.isLeaf && self.requiresGrad)
    throw flockError(
      'ERR_AUTOGRAD',
      op,
      `a leaf tensor that requires grad cannot be modified in place outside noGrad (shape ${shapeStr(self.shape)}); wrap the write in noGrad(() => ...)`,
    );
  if (tracked && baseOf(self) !== undefined)
    throw flockError(
      'ERR_AUTOGRAD',
      op,
      `writing in place into a view (shape ${shapeStr(self.shape)}) while autograd records the write is not supported: ` +
        'the tensor it views would keep its old history; clone() the view first or write under noGrad',
    );
  let before = self;
  if (tracked) {
    before = readsBefore ? noGrad(() => ew.clone(self)) : wrap(native.reshape(self.handle, [...self.shape]));
    before.requiresGrad = self.requiresGrad;
    before.gradFn = self.gradFn;
  }
  const run = () => compute(before);
  const result = tracked ? run() : noGrad(run);
  if (result.shape.length !== self.shape.length || result.shape.some((s, i) => s !== self.shape[i]))
    throw rangeError(op, `the result has shape ${shapeStr(result.shape)}, which does not match self's shape ${shapeStr(self.shape)}`);
  if (!anyCast && !canCast(result.dtype, self.dtype))
    throw typeError(
      op,
      `the result type ${result.dtype} cannot be cast to self's dtype ${self.dtype} (shape ${shapeStr(self.shape)})`,
      'ERR_DTYPE',
    );
  const value = castTo(result, self.dtype);
  noGrad(() => native.copy_(self.handle, value.handle));
  bumpVersions(op, [self]);
  if (tracked) {
    self.gradFn = value.gradFn;
    self.requiresGrad = value.requiresGrad;
  }
  return self;
}

/** A zero gradient for self's overwritten value (PyTorch gives zeros there, not nothing). */
function zeroGrad(before: Tensor): Tensor | null {
  return before.requiresGrad ? wrap(native.full([...before.shape], before.dtype, before.device, 0)) : null;
}

/** Records `fresh` (values that do not depend on self's old ones) with a zero gradient to `before`. */
function replaces(op: string, before: Tensor, fresh: Tensor): Tensor {
  return record(fresh, op, [before], () => [zeroGrad(before)], { savesOutput: false });
}

/** `self += alpha * other` in place (other broadcasts to self's shape). */
export function add_(self: Tensor, other: TensorLike, alpha = 1): Tensor {
  checkNumber('add_', 'alpha', alpha, { infinite: true });
  const direct = alpha === 1 ? () => writesDirectly('add', self, other) : undefined;
  return inPlace('add_', self, [tensorOf(other)], false, (b) => ew.add(b, other, alpha), false, direct);
}

/** `self -= alpha * other` in place. */
export function sub_(self: Tensor, other: TensorLike, alpha = 1): Tensor {
  checkNumber('sub_', 'alpha', alpha, { infinite: true });
  const direct = alpha === 1 ? () => writesDirectly('sub', self, other) : undefined;
  return inPlace('sub_', self, [tensorOf(other)], false, (b) => ew.sub(b, other, alpha), false, direct);
}

/** `self *= other` in place. */
export function mul_(self: Tensor, other: TensorLike): Tensor {
  return scale_('mul', self, other);
}

/** `self /= other` in place (true division: an integer self refuses, as its result is floating). */
export function div_(self: Tensor, other: TensorLike): Tensor {
  return scale_('div', self, other);
}

/** mul_ and div_: their gradient for other reads self's old value, so it is kept when other requires grad. */
function scale_(code: 'mul' | 'div', self: Tensor, other: TensorLike): Tensor {
  const needs = tensorOf(other)?.requiresGrad ?? false;
  const compute = code === 'mul' ? (b: Tensor) => ew.mul(b, other) : (b: Tensor) => ew.div(b, other);
  return inPlace(`${code}_`, self, [tensorOf(other)], needs, compute, false, () => writesDirectly(code, self, other));
}

/** Limits self to [min, max] in place (number or tensor bounds, as {@link ew.clamp}). */
export function clamp_(self: Tensor, min?: TensorLike | null, max?: TensorLike | null): Tensor {
  const bounds = [min, max].filter((v): v is Tensor => typeof v === 'object' && v !== null);
  return inPlace('clamp_', self, bounds, true, (b) => ew.clamp(b, min, max));
}

/** Sets every element to `value` (a number, or a 0-d tensor whose gradient is the sum of self's). */
export function fill_(self: Tensor, value: number | boolean | Tensor): Tensor {
  checkTensor('fill_', 'self', self);
  if (typeof value === 'object' && value !== null) {
    const v = checkTensor('fill_', 'value', value);
    if (v.ndim !== 0) throw rangeError('fill_', `value must be a number or a 0-d tensor, got shape ${shapeStr(v.shape)}`);
    return inPlace(
      'fill_',
      self,
      [v],
      false,
      (b) => {
        const out = noGrad(() => ew.clone(expand(castTo(v, self.dtype), [...self.shape])));
        return record(out, 'fill_', [b, v], (g) => [zeroGrad(b), castTo(sum(g), v.dtype)], { savesOutput: false });
      },
      true,
    );
  }
  if (typeof value !== 'number' && typeof value !== 'boolean')
    throw typeError('fill_', `value must be a number, a boolean or a 0-d tensor, got ${describe(value)}`);
  checkValueFits('fill_', Number(value), self.dtype);
  return inPlace(
    'fill_',
    self,
    [],
    false,
    (b) => replaces('fill_', b, wrap(native.full([...self.shape], self.dtype, self.device, Number(value)))),
    false,
    () => {
      native.fill_(self.handle, Number(value));
      return true;
    },
  );
}

/** Sets every element to 0. */
export function zero_(self: Tensor): Tensor {
  return fill_(self, 0);
}

/**
 * Copies `src` into self: src broadcasts to self's shape and is cast to self's dtype and moved to
 * its device (any cast, as torch's copy_). The gradient flows to src, none to self's old value.
 */
export function copy_(self: Tensor, src: Tensor): Tensor {
  checkTensor('copy_', 'self', self);
  checkTensor('copy_', 'src', src);
  return inPlace(
    'copy_',
    self,
    [src],
    false,
    (b) => {
      const out = noGrad(() => {
        const moved = src.device === self.device ? src : ew.to(src, self.device);
        const cast = castTo(moved, self.dtype);
        const wide = expand(cast, [...self.shape]);
        // A new handle even when nothing changed, so recording below never touches src itself.
        return wide === src ? wrap(native.reshape(src.handle, [...src.shape])) : wide;
      });
      return record(
        out,
        'copy_',
        [b, src],
        (g) => [zeroGrad(b), src.requiresGrad ? ew.to(castTo(sumTo(g, src.shape), src.dtype), src.device) : null],
        { savesOutput: false },
      );
    },
    true,
  );
}

function randomFill(op: 'uniform_' | 'normal_', self: Tensor, a: number, b: number): Tensor {
  checkTensor(op, 'self', self);
  if (!isFloating(self.dtype))
    throw typeError(op, `random values need a floating tensor (f32, f64, bf16, f16), got ${self.dtype}`, 'ERR_DTYPE');
  for (const [name, v] of [
    [op === 'uniform_' ? 'from' : 'mean', a],
    [op === 'uniform_' ? 'to' : 'std', b],
  ] as const)
    if (typeof v !== 'number' || !Number.isFinite(v)) throw typeError(op, `${name} must be a finite number, got ${describe(v)}`);
  if (op === 'uniform_' && a > b) throw rangeError(op, `expects from <= to, got from=${a} and to=${b}`, 'ERR_RANGE');
  if (op === 'normal_' && b < 0) throw rangeError(op, `expects std >= 0, got ${b}`, 'ERR_RANGE');
  const o = { dtype: self.dtype, device: self.device };
  return inPlace(op, self, [], false, (before) =>
    replaces(
      op,
      before,
      op === 'uniform_' ? rand([...self.shape], { ...o, low: a, high: b }) : randn([...self.shape], { ...o, mean: a, std: b }),
    ),
  );
}

/** Fills self with uniform samples in [from, to) (default [0, 1)) from the global generator. */
export const uniform_ = (self: Tensor, from = 0, to = 1): Tensor => randomFill('uniform_', self, from, to);
/** Fills self with normal samples (default mean 0, std 1) from the global generator. */
export const normal_ = (self: Tensor, mean = 0, std = 1): Tensor => randomFill('normal_', self, mean, std);
