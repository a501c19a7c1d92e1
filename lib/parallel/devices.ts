/**
 * What the single-process strategies share: device lists, splitting a batch across devices, and
 * copying a module onto another device (a replica with its own parameters and buffers).
 */
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { normalizeDevice } from '../device';
import { Module } from '../nn/module';
import { Parameter } from '../nn/parameter';
import { argError, describe, flockError } from '../errors';

/** Validates a non-empty device list, each normalised ('cuda' → 'cuda:0'). */
export function checkDevices(op: string, devices: unknown, name = 'devices'): string[] {
  if (!Array.isArray(devices) || devices.length === 0)
    throw argError(
      op,
      `${name} must be a non-empty array of devices such as ['cpu:0', 'cpu:1'] or ['cuda:0', 'cuda:1'], got ${describe(devices)}`,
    );
  return devices.map((d) => normalizeDevice(d, op));
}

/**
 * Splits every tensor in `inputs` along dim 0 into `n` chunks of ⌈B/n⌉ rows (the last smaller, as
 * PyTorch's scatter), moving chunk i to `devices[i]`; other values go to every replica unchanged.
 * All tensors must have the same batch size B ≥ n. The copies are recorded by autograd.
 */
export function scatter(op: string, inputs: unknown[], devices: string[]): unknown[][] {
  const tensors = inputs.filter((v): v is Tensor => v instanceof Tensor);
  if (tensors.length === 0) throw argError(op, 'forward needs at least one Tensor input to split across devices');
  const batch = tensors[0].shape[0];
  for (const t of tensors)
    if (t.ndim === 0 || t.shape[0] !== batch)
      throw flockError(
        'ERR_SHAPE',
        op,
        `every tensor input is split along dim 0 and must have the same batch size; got shapes ${tensors.map((x) => `[${x.shape.join(',')}]`).join(', ')}`,
      );
  if (batch < devices.length)
    throw flockError('ERR_SHAPE', op, `a batch of ${batch} cannot be split across ${devices.length} devices (${devices.join(', ')})`);
  const size = Math.ceil(batch / devices.length);
  return devices.map((d, i) => {
    const start = Math.min(i * size, batch);
    const len = Math.min(size, batch - start);
    if (len === 0) return [];
    return inputs.map((v) => (v instanceof Tensor ? v.narrow(0, start, len).to(d) : v));
  });
}

/**
 * A copy of `m` on `device`: the same class and settings, its own Parameter objects (copies of the
 * values, same requiresGrad) and buffers. A parameter shared by two sub-modules stays shared.
 * Sub-modules with no parameters and no buffers (activations, pooling, losses) hold only settings
 * and are shared with the original rather than copied, since their private fields cannot be.
 */
export function replicate<M extends Module>(m: M, device: string): M {
  if (!(m instanceof Module)) throw argError('replicate', `m must be a Module, got ${describe(m)}`);
  const d = normalizeDevice(device, 'replicate');
  return noGrad(() => cloneModule(m, d, new Map())) as M;
}

function cloneTensor(t: Tensor, device: string): Tensor {
  const moved = t.to(device);
  return keep(moved === t ? t.clone() : moved);
}

function cloneModule(m: Module, device: string, memo: Map<object, unknown>): Module {
  if (memo.has(m)) return memo.get(m) as Module;
  if (m.parameters().length === 0 && m.buffers().length === 0) return m;
  const copy = Object.create(Object.getPrototypeOf(m)) as Record<string, unknown>;
  memo.set(m, copy);
  for (const [k, v] of Object.entries(m)) {
    if (v instanceof Parameter) {
      if (!memo.has(v)) {
        const data = cloneTensor(v, device);
        memo.set(v, new Parameter(data, v.requiresGrad));
        data.dispose();
      }
      copy[k] = memo.get(v);
    } else if (v instanceof Module) copy[k] = cloneModule(v, device, memo);
    else if (v instanceof Tensor) copy[k] = cloneTensor(v, device);
    else if (k === '_buffers' && v instanceof Map)
      copy[k] = new Map(Array.from(v as Map<string, Tensor | null>, ([name, b]) => [name, b && cloneTensor(b, device)]));
    else if (Array.isArray(v) && v.some((x) => x instanceof Tensor || x instanceof Module))
      throw argError(
        'replicate',
        `cannot copy field '${k}' of ${m.constructor.name}: tensors and modules held in arrays are not found by parameters(); use a ModuleList`,
      );
    else copy[k] = v;
  }
  return copy as unknown as Module;
}

/** Gives every module of `to` (a replica of `from`) the training mode of its counterpart in `from`. */
export function copyTrainingMode(from: Module, to: Module): void {
  if (from === to) return;
  const src = [...from.modules()];
  [...to.modules()].forEach((m, i) => (m.training = src[i].training));
}
