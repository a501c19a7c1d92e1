/** linear, dropout and embedding: the small functional ops of the common layers. */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { record } from '../../autograd/node';
import { matmulT } from '../../ops/linalg';
import { bernoulli } from '../../ops/creation';
import { checkTensor, rangeError, shapeStr, typeError, wrap } from '../../ops/util';

/** The activations {@link linear} can fuse with its bias add. */
export type LinearActivation = 'none' | 'relu' | 'gelu' | 'gelu_tanh' | 'silu' | 'tanh' | 'sigmoid';
const ACTIVATIONS: readonly LinearActivation[] = ['none', 'relu', 'gelu', 'gelu_tanh', 'silu', 'tanh', 'sigmoid'];

export interface LinearOptions {
  /** Applied to x·Wᵀ + b in the same pass as the bias add (default 'none'). */
  activation?: LinearActivation;
}

/**
 * act(x + bias) for x [rows, n], bias [n] in one kernel. Backward: relu reads its derivative off
 * the output (positive exactly where x + bias is); the smooth activations recompute x + bias from
 * the saved input rather than keep a pre-activation copy. The bias gradient sums over rows.
 */
function biasAct(x: Tensor, bias: Tensor, act: LinearActivation): Tensor {
  const out = wrap(native.biasAct(x.handle, bias.handle, act));
  return record(out, 'linear', [x, bias], (g) => {
    const gpre = act === 'none' ? g
      : act === 'relu' ? wrap(native.biasActBackward(g.handle, out.handle, null, act))
        : wrap(native.biasActBackward(g.handle, x.handle, bias.handle, act));
    return [x.requiresGrad ? gpre : null, bias.requiresGrad ? wrap(native.reduce('sum', gpre.handle, [0], false)) : null];
  });
}

function activate(y: Tensor, act: LinearActivation): Tensor {
  switch (act) {
    case 'none': return y;
    case 'gelu_tanh': return y.gelu('tanh');
    default: return y[act]();
  }
}

/**
 * act(x · weightᵀ + bias), with weight [out, in] and bias [out]; the matmul reads the transpose in
 * place and the bias add and activation run as one fused pass over the output.
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null, options: LinearOptions = {}): Tensor {
  checkTensor('linear', 'input', x);
  checkTensor('linear', 'weight', weight);
  if (bias !== undefined && bias !== null) checkTensor('linear', 'bias', bias);
  if (typeof options !== 'object' || options === null) throw typeError('linear', `options must be an object, got ${options === null ? 'null' : typeof options}`);
  const act = options.activation ?? 'none';
  if (!ACTIVATIONS.includes(act)) throw typeError('linear', `unknown activation '${String(act)}': expected one of ${ACTIVATIONS.join(', ')}`);
  if (weight.ndim !== 2) throw rangeError('linear', `weight must be 2-D [out, in], got ${shapeStr(weight.shape)}`);
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== weight.shape[1])
    throw rangeError('linear', `input ${shapeStr(x.shape)} has ${x.shape[x.ndim - 1]} features, weight ${shapeStr(weight.shape)} expects ${weight.shape[1]}`);
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== weight.shape[0]))
    throw rangeError('linear', `bias ${shapeStr(bias.shape)} does not match weight ${shapeStr(weight.shape)}: expected [${weight.shape[0]}]`);
  if (bias && bias.dtype !== weight.dtype)
    throw typeError('linear', `bias is ${bias.dtype}, weight is ${weight.dtype}`, 'ERR_DTYPE');
  const lead = x.shape.slice(0, -1);
  const x2 = x.ndim === 2 ? x : x.reshape([-1, weight.shape[1]]);
  const mm = matmulT(x2, weight, false, true);
  const y = bias ? biasAct(mm, bias, act) : activate(mm, act);
  return x.ndim === 2 ? y : y.reshape([...lead, weight.shape[0]]);
}

/**
 * Zeroes each element with probability p and scales the rest by 1/(1−p) while training; the mask
 * comes from the global Philox generator, so fl.manualSeed makes it reproducible.
 */
export function dropout(x: Tensor, p = 0.5, training = true): Tensor {
  checkTensor('dropout', 'input', x);
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) throw rangeError('dropout', `p must be in [0, 1], got ${p}`, 'ERR_RANGE');
  if (!training || p === 0) return x;
  if (p === 1) return x.mul(0);
  const mask = bernoulli([...x.shape], 1 - p, { dtype: x.dtype, device: x.device });
  return x.mul(mask.mul(1 / (1 - p)));
}

/** Rows of `weight` [num, dim] picked by integer `indices` of any shape: [...indices.shape, dim]. */
export function embedding(indices: Tensor, weight: Tensor): Tensor {
  checkTensor('embedding', 'indices', indices);
  checkTensor('embedding', 'weight', weight);
  if (indices.dtype !== 'i64' && indices.dtype !== 'i32') throw typeError('embedding', `indices must be i64 or i32, got ${indices.dtype}`, 'ERR_DTYPE');
  if (weight.ndim !== 2) throw rangeError('embedding', `weight must be 2-D [num, dim], got ${shapeStr(weight.shape)}`);
  const rows = weight.indexSelect(0, indices.reshape([-1]));
  return rows.reshape([...indices.shape, weight.shape[1]]);
}
