/** linear, dropout and embedding: the small functional ops of the common layers. */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { record } from '../../dispatch/record';
import { matmulT, productGrads, productUntracked } from '../../ops/linalg';
import { bernoulli } from '../../ops/creation';
import { shapeStr, wrap } from '../../ops/util';
import { checkOptions, dtypeError, flockError, shapeError } from '../../errors';
import { checkBool, checkChoice, checkNumber } from '../../validate';
import { isFloating } from '../../dtype';
import { tensorArg } from './args';
import { type AutocastDType, autocastLowering } from '../../dispatch/autocast';

/** The activations {@link linear} can fuse with its bias add. */
export type LinearActivation = 'none' | 'relu' | 'gelu' | 'gelu_tanh' | 'silu' | 'tanh' | 'sigmoid';
const ACTIVATIONS: readonly LinearActivation[] = ['none', 'relu', 'gelu', 'gelu_tanh', 'silu', 'tanh', 'sigmoid'];

export interface LinearOptions {
  /** Applied to x·Wᵀ + b in the same pass as the bias add (default 'none'). */
  activation?: LinearActivation;
}

/**
 * act(x2 · weightᵀ + bias) for x2 [rows, in], recorded as one graph node. The product is computed
 * untracked and, for 'none' and 'relu' (whose backward needs no pre-activation), the bias add and
 * activation write over it, so the layer holds one [rows, out] tensor, as PyTorch's addmm does.
 * Backward: relu reads its derivative off the output (positive exactly where the pre-activation
 * is); the smooth activations recompute it from the kept product plus the bias. The bias gradient
 * sums over rows; the product's gradients are matmul's, autocast lowering included.
 */
function linearBiasAct(x2: Tensor, weight: Tensor, bias: Tensor, act: LinearActivation, lower: AutocastDType | undefined): Tensor {
  const mm = productUntracked(x2, weight, false, true, lower);
  const inPlace = act === 'none' || act === 'relu';
  const out = wrap(native.biasAct(mm.handle, bias.handle, act, inPlace));
  if (inPlace) mm.dispose(); // out now owns the storage
  const y = record(
    out,
    'linear',
    [x2, weight, bias],
    (g, into) => {
      const gpre =
        act === 'none'
          ? g
          : act === 'relu'
            ? wrap(native.biasActBackward(g.handle, out.handle, null, act))
            : wrap(native.biasActBackward(g.handle, mm.handle, bias.handle, act));
      const [gx, gw] = productGrads(x2, weight, false, true, lower, gpre, into);
      if (!bias.requiresGrad) return [gx, gw, null];
      // An f32 bias the kernel rounded (autocast): its gradient as the cast's backward gives it.
      const gb = wrap(native.reduce('sum', gpre.handle, [0], false));
      return [gx, gw, bias.dtype === gb.dtype ? gb : wrap(native.cast(gb.handle, bias.dtype))];
    },
    { savesOutput: act === 'relu' },
  );
  if (!inPlace && !y.requiresGrad) mm.dispose(); // not recorded: no backward will read it
  return y;
}

function activate(y: Tensor, act: LinearActivation): Tensor {
  switch (act) {
    case 'none':
      return y;
    case 'gelu_tanh':
      return y.gelu('tanh');
    default:
      return y[act]();
  }
}

/**
 * act(x · weightᵀ + bias), with weight [out, in] and bias [out]; the matmul reads the transpose in
 * place and the bias add and activation run as one fused pass over the output.
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null, options: LinearOptions = {}): Tensor {
  tensorArg('linear', 'input', x);
  tensorArg('linear', 'weight', weight);
  if (bias !== undefined && bias !== null) tensorArg('linear', 'bias', bias);
  const act = checkChoice('linear', 'activation', checkOptions('linear', options, ['activation']).activation ?? 'none', ACTIVATIONS);
  // Under autocast the GEMM rounds f32 input and weight itself. On the CPU the bias kernel rounds an
  // f32 bias itself too (activations none and relu, which write over the product); else it is cast.
  const lowering = autocastLowering('nn.functional.linear', x, weight, bias);
  let roundsBias = false;
  if (lowering) {
    x = lowering.operand(x);
    weight = lowering.operand(weight);
    roundsBias =
      bias?.dtype === 'f32' && (act === 'none' || act === 'relu') && weight.device.startsWith('cpu') && bias.device === weight.device;
    if (bias && !roundsBias) bias = lowering.cast(bias);
  }
  if (!isFloating(x.dtype) || !isFloating(weight.dtype))
    throw flockError('ERR_DTYPE', 'linear', `input and weight must be floating tensors, got ${x.dtype} and ${weight.dtype}`);
  if (x.dtype !== weight.dtype && !lowering) throw dtypeError('linear', `input is ${x.dtype}, weight is ${weight.dtype}`);
  if (x.device !== weight.device || (bias && bias.device !== weight.device))
    throw flockError(
      'ERR_DEVICE',
      'linear',
      `input is on ${x.device}, weight on ${weight.device}${bias ? `, bias on ${bias.device}` : ''}`,
    );
  if (weight.ndim !== 2) throw shapeError('linear', `weight must be 2-D [out, in], got ${shapeStr(weight.shape)}`);
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== weight.shape[1])
    throw shapeError(
      'linear',
      `input ${shapeStr(x.shape)} has ${x.shape[x.ndim - 1]} features, weight ${shapeStr(weight.shape)} expects ${weight.shape[1]}`,
    );
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== weight.shape[0]))
    throw shapeError(
      'linear',
      `bias ${shapeStr(bias.shape)} does not match weight ${shapeStr(weight.shape)}: expected [${weight.shape[0]}]`,
    );
  if (bias && !roundsBias && bias.dtype !== (lowering?.dtype ?? weight.dtype))
    throw dtypeError('linear', `bias is ${bias.dtype}, weight is ${weight.dtype}`);
  const lead = x.shape.slice(0, -1);
  const x2 = x.ndim === 2 ? x : x.reshape([-1, weight.shape[1]]);
  const y = bias ? linearBiasAct(x2, weight, bias, act, lowering?.dtype) : activate(matmulT(x2, weight, false, true, lowering?.dtype), act);
  return x.ndim === 2 ? y : y.reshape([...lead, weight.shape[0]]);
}

/**
 * Zeroes each element with probability p and scales the rest by 1/(1−p) while training; the mask
 * comes from the global Philox generator, so fl.manualSeed makes it reproducible.
 */
export function dropout(x: Tensor, p = 0.5, training = true): Tensor {
  tensorArg('dropout', 'input', x);
  checkNumber('dropout', 'p', p, { min: 0, max: 1 });
  checkBool('dropout', 'training', training);
  if (!training || p === 0) return x;
  if (p === 1) return x.mul(0);
  // As torch: a mask scaled by 1 / (1 - p) has no integer or bool dtype to be multiplied in.
  if (!isFloating(x.dtype)) throw flockError('ERR_DTYPE', 'dropout', `expected a floating tensor for 0 < p < 1, got ${x.dtype}`);
  const mask = bernoulli([...x.shape], 1 - p, { dtype: x.dtype, device: x.device });
  return x.mul(mask.mul(1 / (1 - p)));
}

/** Rows of `weight` [num, dim] picked by integer `indices` of any shape: [...indices.shape, dim]. */
export function embedding(indices: Tensor, weight: Tensor): Tensor {
  tensorArg('embedding', 'indices', indices);
  tensorArg('embedding', 'weight', weight);
  if (indices.dtype !== 'i64' && indices.dtype !== 'i32')
    throw flockError(
      'ERR_DTYPE',
      'embedding',
      `indices must be an i64 or i32 tensor, got ${indices.dtype}${isFloating(indices.dtype) ? " — use indices.to('i64')" : ''}`,
    );
  if (weight.ndim !== 2) throw flockError('ERR_SHAPE', 'embedding', `weight must be 2-D [num, dim], got ${shapeStr(weight.shape)}`);
  if (indices.device !== weight.device)
    throw flockError('ERR_DEVICE', 'embedding', `indices are on ${indices.device}, weight on ${weight.device}`);
  const flat = wrap(native.reshape(indices.handle, [-1]));
  // The native lookup names 'embedding' in its errors, including an index out of range found
  // while the kernel runs. Backward scatter-adds each gradient row into its source row.
  const rows = record(
    wrap(native.indexSelect(weight.handle, 0, flat.handle, 'embedding')),
    'embedding',
    [weight],
    (g) => {
      const col = wrap(native.reshape(flat.handle, [flat.shape[0], 1]));
      const idx = wrap(native.expand(col.handle, [...g.shape]));
      const zeros = wrap(native.full([...weight.shape], g.dtype, g.device, 0));
      return [wrap(native.scatterAdd(zeros.handle, 0, idx.handle, g.handle))];
    },
    { savesOutput: false, saves: [indices] },
  );
  return rows.reshape([...indices.shape, weight.shape[1]]);
}
