/**
 * Recurrent cells: the fused native sequence of one layer and direction that nn.RNN, nn.LSTM and
 * nn.GRU are built from, the functional single steps (rnnTanhCell, rnnReluCell, lstmCell, gruCell,
 * as torch's) and the layers nn.RNNCell, nn.LSTMCell and nn.GRUCell. A step is one GEMM of the
 * hidden state (the input projection of every step is one GEMM before the loop, through `linear`,
 * whose gradient is the ordinary one) and one native cell kernel; backward is one recorded node
 * per layer and direction that runs the cell's backward kernel step by step.
 */
// defines: native (the rnnForward/rnnBackward bindings), record (the node of a sequence)
import { native } from '../native';
import type { RnnMode } from '../../types/native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { isGradEnabled } from '../dispatch/grad_mode';
import { wrap, shapeStr } from '../ops/util';
import { zeros } from '../ops/creation';
import { isFloating } from '../dtype';
import { checkOptions, flockError } from '../errors';
import { checkBool, checkChoice, checkInt } from '../validate';
import { linear } from './functional/basic';
import { tensorArg, tensorOptions } from './functional/args';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { uniform_ } from './init';

export type { RnnMode } from '../../types/native';

/** What one layer and direction gives: every step's h [T, B, H], the last h and (LSTM) the last c. */
export interface RnnSequence {
  output: Tensor;
  hN: Tensor;
  cN: Tensor | null;
}

/** Gates per hidden unit: LSTM i, f, g, o; GRU r, z, n; a plain RNN one. */
export const gatesOf = (mode: RnnMode): number => (mode === 'lstm' ? 4 : mode === 'gru' ? 3 : 1);

/**
 * @internal One layer and direction over a sequence: gx [T, B, G] is the input projection of every
 * step (x·W_ihᵀ + b_ih), the rest as the native rnnForward. One recorded node maps the gradient of
 * every state to gx, W_hh, b_hh, h0 and c0; the outputs are views of the states it records.
 */
export function rnnSequence(
  mode: RnnMode,
  gx: Tensor,
  wHh: Tensor,
  bHh: Tensor | null,
  h0: Tensor,
  c0: Tensor | null,
  reverse: boolean,
): RnnSequence {
  const inputs = [gx, wHh, ...(bHh ? [bHh] : []), h0, ...(c0 ? [c0] : [])];
  const save = isGradEnabled() && inputs.some((t) => t.requiresGrad);
  const [sh, svh] = native.rnnForward(mode, gx.handle, wHh.handle, bHh?.handle ?? null, h0.handle, c0?.handle ?? null, reverse, save);
  const states = wrap(sh);
  const saved = svh === null ? null : wrap(svh);
  record(states, `${mode}Backward`, inputs, (g) => {
    const [dgx, dw, db, dh0, dc0] = native.rnnBackward(
      mode,
      g.handle,
      states.handle,
      saved?.handle ?? null,
      wHh.handle,
      reverse,
      wHh.requiresGrad,
      !!bHh?.requiresGrad,
      h0.requiresGrad,
      !!c0?.requiresGrad,
    );
    const opt = (h: typeof dw) => (h === null ? null : wrap(h));
    return [wrap(dgx), opt(dw), ...(bHh ? [opt(db)] : []), opt(dh0), ...(c0 ? [opt(dc0)] : [])];
  });
  const T = gx.shape[0];
  const hs = mode === 'lstm' ? states.select(0, 0) : states;
  const last = reverse ? 0 : T;
  return {
    output: hs.narrow(0, reverse ? 0 : 1, T),
    hN: hs.select(0, last),
    cN: mode === 'lstm' ? states.select(0, 1).select(0, last) : null,
  };
}

/** A state's expected shape, or ERR_SHAPE naming the cell and the argument. */
function checkState(op: string, name: string, t: Tensor, shape: number[], ref: Tensor): void {
  if (t.ndim !== shape.length || t.shape.some((s, i) => s !== shape[i]))
    throw flockError('ERR_SHAPE', op, `${name} must be ${shapeStr(shape)} for input ${shapeStr(ref.shape)}, got ${shapeStr(t.shape)}`);
  if (t.dtype !== ref.dtype) throw flockError('ERR_DTYPE', op, `${name} is ${t.dtype}, input is ${ref.dtype}`);
  if (t.device !== ref.device) throw flockError('ERR_DEVICE', op, `${name} is on ${t.device}, input on ${ref.device}`);
}

/**
 * One step of a cell on input [B, I] or unbatched [I]; `states` are h (and c) or null for zeros.
 * Returns the new h (and c), batched as the input.
 */
function cellStep(
  op: string,
  mode: RnnMode,
  input: unknown,
  states: readonly (Tensor | null)[],
  wIh: unknown,
  wHh: unknown,
  bIh: unknown,
  bHh: unknown,
): Tensor[] {
  const x = tensorArg(op, 'input', input);
  const w1 = tensorArg(op, 'weightIh', wIh),
    w2 = tensorArg(op, 'weightHh', wHh);
  const b1 = bIh === null || bIh === undefined ? null : tensorArg(op, 'biasIh', bIh);
  const b2 = bHh === null || bHh === undefined ? null : tensorArg(op, 'biasHh', bHh);
  if (!isFloating(x.dtype)) throw flockError('ERR_DTYPE', op, `input must be a floating tensor, got ${x.dtype}`);
  if (x.ndim !== 1 && x.ndim !== 2)
    throw flockError('ERR_SHAPE', op, `expected input to be 1-D or 2-D, got ${x.ndim}-D ${shapeStr(x.shape)}`);
  if (w2.ndim !== 2 || w2.shape[0] !== gatesOf(mode) * w2.shape[1])
    throw flockError('ERR_SHAPE', op, `weightHh must be [${gatesOf(mode)}·hidden, hidden], got ${shapeStr(w2.shape)}`);
  const H = w2.shape[1];
  const batched = x.ndim === 2;
  const x2 = batched ? x : x.unsqueeze(0);
  const B = x2.shape[0];
  const hc = states.map((s, i) => {
    const name = i === 0 ? 'hx' : 'cx';
    if (s === null) return zeros([B, H], { dtype: x.dtype, device: x.device });
    tensorArg(op, name, s);
    checkState(op, name, s, batched ? [B, H] : [H], x);
    return batched ? s : s.unsqueeze(0);
  });
  const gx = linear(x2, w1, b1).unsqueeze(0);
  const r = rnnSequence(mode, gx, w2, b2, hc[0], hc[1] ?? null, false);
  const out = mode === 'lstm' ? [r.hN, r.cN as Tensor] : [r.hN];
  return batched ? out : out.map((t) => t.squeeze(0));
}

/** One step of an Elman cell, h' = tanh(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh), as torch.rnn_tanh_cell. */
export function rnnTanhCell(input: Tensor, hx: Tensor | null, wIh: Tensor, wHh: Tensor, bIh?: Tensor | null, bHh?: Tensor | null): Tensor {
  return cellStep('rnnTanhCell', 'rnn_tanh', input, [hx ?? null], wIh, wHh, bIh, bHh)[0];
}

/** One step of an Elman cell with relu, as torch.rnn_relu_cell. */
export function rnnReluCell(input: Tensor, hx: Tensor | null, wIh: Tensor, wHh: Tensor, bIh?: Tensor | null, bHh?: Tensor | null): Tensor {
  return cellStep('rnnReluCell', 'rnn_relu', input, [hx ?? null], wIh, wHh, bIh, bHh)[0];
}

/** One LSTM step (gates i, f, g, o), as torch.lstm_cell: [h', c'] from [h, c] (null: zeros). */
export function lstmCell(
  input: Tensor,
  hx: readonly [Tensor, Tensor] | null,
  wIh: Tensor,
  wHh: Tensor,
  bIh?: Tensor | null,
  bHh?: Tensor | null,
): [Tensor, Tensor] {
  if (hx !== null && hx !== undefined && (!Array.isArray(hx) || hx.length !== 2))
    throw flockError('ERR_ARG', 'lstmCell', 'hx must be a pair [h, c] or null');
  const [h, c] = cellStep('lstmCell', 'lstm', input, hx ? [hx[0], hx[1]] : [null, null], wIh, wHh, bIh, bHh);
  return [h, c];
}

/** One GRU step (gates r, z, n; n = tanh(W_in x + b_in + r·(W_hn h + b_hn))), as torch.gru_cell. */
export function gruCell(input: Tensor, hx: Tensor | null, wIh: Tensor, wHh: Tensor, bIh?: Tensor | null, bHh?: Tensor | null): Tensor {
  return cellStep('gruCell', 'gru', input, [hx ?? null], wIh, wHh, bIh, bHh)[0];
}

/** Options of the cell layers (nonlinearity: nn.RNNCell only). */
export interface RNNCellOptions {
  bias?: boolean;
  nonlinearity?: 'tanh' | 'relu';
  dtype?: import('../dtype').DType;
  device?: string;
}

/** PyTorch's RNN initialisation: every weight and bias uniform in ±1/√hidden. */
export function rnnInit_(params: Iterable<Parameter>, hiddenSize: number): void {
  const k = hiddenSize > 0 ? 1 / Math.sqrt(hiddenSize) : 0;
  for (const p of params) uniform_(p, -k, k);
}

abstract class CellBase extends Module {
  weight_ih: Parameter;
  weight_hh: Parameter;
  bias_ih: Parameter | null;
  bias_hh: Parameter | null;

  protected constructor(
    readonly op: string,
    readonly mode: RnnMode,
    readonly inputSize: number,
    readonly hiddenSize: number,
    o: RNNCellOptions,
  ) {
    super();
    checkInt(op, 'inputSize', inputSize);
    checkInt(op, 'hiddenSize', hiddenSize, 1);
    const bias = checkBool(op, 'bias', o.bias ?? true);
    const t = tensorOptions(op, o);
    const G = gatesOf(mode) * hiddenSize;
    this.weight_ih = ownParameter(zeros([G, inputSize], t));
    this.weight_hh = ownParameter(zeros([G, hiddenSize], t));
    this.bias_ih = bias ? ownParameter(zeros([G], t)) : null;
    this.bias_hh = bias ? ownParameter(zeros([G], t)) : null;
    rnnInit_(this.parameters(), hiddenSize);
  }

  protected checkInput(input: unknown): Tensor {
    const x = tensorArg(this.op, 'input', input);
    if (x.ndim !== 1 && x.ndim !== 2)
      throw flockError('ERR_SHAPE', this.op, `expected input to be 1-D or 2-D, got ${x.ndim}-D ${shapeStr(x.shape)}`);
    if (x.shape[x.ndim - 1] !== this.inputSize)
      throw flockError('ERR_SHAPE', this.op, `input ${shapeStr(x.shape)} has ${x.shape[x.ndim - 1]} features, expected ${this.inputSize}`);
    return x;
  }

  override extraRepr(): string {
    const extra = this.mode === 'rnn_relu' ? ", nonlinearity='relu'" : '';
    return `${this.inputSize}, ${this.hiddenSize}${this.bias_ih ? '' : `, bias=${pyRepr(false)}`}${extra}`;
  }
}

/** An Elman RNN cell: h' = tanh or relu(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh), as torch.nn.RNNCell. */
export class RNNCell extends CellBase {
  constructor(inputSize: number, hiddenSize: number, options: RNNCellOptions = {}) {
    const o = checkOptions('RNNCell', options, ['bias', 'nonlinearity', 'dtype', 'device']);
    const nl = checkChoice('RNNCell', 'nonlinearity', o.nonlinearity ?? 'tanh', ['tanh', 'relu'] as const);
    super('RNNCell', nl === 'tanh' ? 'rnn_tanh' : 'rnn_relu', inputSize, hiddenSize, o);
  }

  /** input [B, I] or [I]; hx [B, H] or [H] (default zeros) → h'. */
  forward(input: Tensor, hx: Tensor | null = null): Tensor {
    const x = this.checkInput(input);
    return cellStep(this.op, this.mode, x, [hx], this.weight_ih, this.weight_hh, this.bias_ih, this.bias_hh)[0];
  }
}

/** An LSTM cell, as torch.nn.LSTMCell: forward(input, [h, c]?) → [h', c']. */
export class LSTMCell extends CellBase {
  constructor(inputSize: number, hiddenSize: number, options: Omit<RNNCellOptions, 'nonlinearity'> = {}) {
    super('LSTMCell', 'lstm', inputSize, hiddenSize, checkOptions('LSTMCell', options, ['bias', 'dtype', 'device']));
  }

  forward(input: Tensor, hx: readonly [Tensor, Tensor] | null = null): [Tensor, Tensor] {
    const x = this.checkInput(input);
    if (hx !== null && (!Array.isArray(hx) || hx.length !== 2)) throw flockError('ERR_ARG', this.op, 'hx must be a pair [h, c] or null');
    const [h, c] = cellStep(
      this.op,
      'lstm',
      x,
      hx ? [hx[0], hx[1]] : [null, null],
      this.weight_ih,
      this.weight_hh,
      this.bias_ih,
      this.bias_hh,
    );
    return [h, c];
  }
}

/** A GRU cell, as torch.nn.GRUCell: forward(input, h?) → h'. */
export class GRUCell extends CellBase {
  constructor(inputSize: number, hiddenSize: number, options: Omit<RNNCellOptions, 'nonlinearity'> = {}) {
    super('GRUCell', 'gru', inputSize, hiddenSize, checkOptions('GRUCell', options, ['bias', 'dtype', 'device']));
  }

  forward(input: Tensor, hx: Tensor | null = null): Tensor {
    const x = this.checkInput(input);
    return cellStep(this.op, 'gru', x, [hx], this.weight_ih, this.weight_hh, this.bias_ih, this.bias_hh)[0];
  }
}
