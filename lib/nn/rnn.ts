/**
 * nn.RNN, nn.LSTM and nn.GRU with PyTorch 1.13's semantics: numLayers, bidirectional, batchFirst,
 * dropout between layers (training only, not after the last), bias, initial states (zeros by
 * default), unbatched inputs, and PyTorch's parameter names, shapes and initialisation, so state
 * dicts move between the two both ways. Each layer and direction is one input GEMM over the whole
 * sequence and the fused native sequence of rnn_cell.ts.
 */
import type { Tensor } from '../tensor';
import type { DType } from '../dtype';
import { zeros } from '../ops/creation';
import { cat, stack } from '../ops/shape';
import { shapeStr } from '../ops/util';
import { checkOptions, flockError } from '../errors';
import { checkBool, checkChoice, checkInt, checkNumber } from '../validate';
import { dropout, linear } from './functional/basic';
import { tensorArg, tensorOptions } from './functional/args';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { type RnnMode, gatesOf, rnnInit_, rnnSequence } from './rnn_cell';

export interface RNNOptions {
  /** Stacked layers, each reading the previous one's output (default 1). */
  numLayers?: number;
  /** nn.RNN only: 'tanh' (default) or 'relu'. */
  nonlinearity?: 'tanh' | 'relu';
  bias?: boolean;
  /** Input and output as [B, T, ·] instead of [T, B, ·] (the states stay [layers·dirs, B, H]). */
  batchFirst?: boolean;
  /** Dropout probability on every layer's output but the last's, while training (default 0). */
  dropout?: number;
  bidirectional?: boolean;
  /** nn.LSTM only; projections are not implemented, so anything but 0 is ERR_ARG. */
  projSize?: number;
  dtype?: DType;
  device?: string;
}

/** The layers' shared part (torch.nn.RNNBase): parameters, checks and the layer loop. */
abstract class RNNBase extends Module {
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;

  protected constructor(
    readonly op: string,
    readonly mode: RnnMode,
    readonly inputSize: number,
    readonly hiddenSize: number,
    o: RNNOptions,
  ) {
    super();
    checkInt(op, 'inputSize', inputSize);
    checkInt(op, 'hiddenSize', hiddenSize, 1);
    this.numLayers = checkInt(op, 'numLayers', o.numLayers ?? 1, 1);
    this.bias = checkBool(op, 'bias', o.bias ?? true);
    this.batchFirst = checkBool(op, 'batchFirst', o.batchFirst ?? false);
    this.dropout = checkNumber(op, 'dropout', o.dropout ?? 0, { min: 0, max: 1 });
    this.bidirectional = checkBool(op, 'bidirectional', o.bidirectional ?? false);
    if (o.projSize !== undefined && checkInt(op, 'projSize', o.projSize) !== 0)
      throw flockError('ERR_ARG', op, `projSize ${o.projSize} is not supported (LSTM projections are not implemented); use 0`);
    const t = tensorOptions(op, o);
    const G = gatesOf(mode) * hiddenSize;
    const dirs = this.bidirectional ? 2 : 1;
    const own = this as unknown as Record<string, Parameter | null>;
    // Registered in PyTorch's order (_flat_weights_names), so parameters() and stateDict() list alike.
    for (let l = 0; l < this.numLayers; l++)
      for (let d = 0; d < dirs; d++) {
        const sfx = `_l${l}${d === 1 ? '_reverse' : ''}`;
        const inSize = l === 0 ? inputSize : hiddenSize * dirs;
        own[`weight_ih${sfx}`] = ownParameter(zeros([G, inSize], t));
        own[`weight_hh${sfx}`] = ownParameter(zeros([G, hiddenSize], t));
        if (this.bias) {
          own[`bias_ih${sfx}`] = ownParameter(zeros([G], t));
          own[`bias_hh${sfx}`] = ownParameter(zeros([G], t));
        }
      }
    rnnInit_(this.parameters(), hiddenSize);
  }

  /** [weight_ih, weight_hh, bias_ih, bias_hh] of layer `l`, direction `d` (biases null without bias). */
  weightsOf(l: number, d: number): [Parameter, Parameter, Parameter | null, Parameter | null] {
    const own = this as unknown as Record<string, Parameter | undefined>;
    const sfx = `_l${l}${d === 1 ? '_reverse' : ''}`;
    const get = (k: string) => own[`${k}${sfx}`] ?? null;
    return [get('weight_ih') as Parameter, get('weight_hh') as Parameter, get('bias_ih'), get('bias_hh')];
  }

  /** The input time-major and batched ([T, B, I]), whether it was batched, and the batch size. */
  protected prepare(input: unknown): { x: Tensor; batched: boolean } {
    const x = tensorArg(this.op, 'input', input);
    if (x.ndim !== 2 && x.ndim !== 3)
      throw flockError('ERR_SHAPE', this.op, `expected input to be 2-D or 3-D, got ${x.ndim}-D ${shapeStr(x.shape)}`);
    if (x.shape[x.ndim - 1] !== this.inputSize)
      throw flockError('ERR_SHAPE', this.op, `input ${shapeStr(x.shape)} has ${x.shape[x.ndim - 1]} features, expected ${this.inputSize}`);
    const batched = x.ndim === 3;
    if (!batched) return { x: x.unsqueeze(1), batched };
    return { x: this.batchFirst ? x.transpose(0, 1) : x, batched };
  }

  /** An initial state [layers·dirs, B, H] (unbatched: [layers·dirs, H]) made batched, or zeros. */
  protected state(name: string, s: unknown, x: Tensor, batched: boolean): Tensor {
    const L = this.numLayers * (this.bidirectional ? 2 : 1);
    const B = x.shape[1];
    if (s === null || s === undefined) return zeros([L, B, this.hiddenSize], { dtype: x.dtype, device: x.device });
    const t = tensorArg(this.op, name, s);
    const want = batched ? [L, B, this.hiddenSize] : [L, this.hiddenSize];
    if (t.ndim !== want.length)
      throw flockError(
        'ERR_SHAPE',
        this.op,
        `for ${batched ? 'batched 3-D' : 'unbatched 2-D'} input, ${name} should be ${want.length}-D but got ${t.ndim}-D ${shapeStr(t.shape)}`,
      );
    if (t.shape.some((v, i) => v !== want[i]))
      throw flockError('ERR_SHAPE', this.op, `expected ${name} ${shapeStr(want)}, got ${shapeStr(t.shape)}`);
    if (t.dtype !== x.dtype) throw flockError('ERR_DTYPE', this.op, `${name} is ${t.dtype}, input is ${x.dtype}`);
    if (t.device !== x.device) throw flockError('ERR_DEVICE', this.op, `${name} is on ${t.device}, input on ${x.device}`);
    return batched ? t : t.unsqueeze(1);
  }

  /** Every layer over x [T, B, I]: the last layer's output [T, B, dirs·H] and the final states. */
  protected run(x: Tensor, h0: Tensor, c0: Tensor | null): { output: Tensor; hN: Tensor; cN: Tensor | null } {
    const dirs = this.bidirectional ? 2 : 1;
    const hs: Tensor[] = [];
    const cs: Tensor[] = [];
    let layerIn = x;
    for (let l = 0; l < this.numLayers; l++) {
      const outs: Tensor[] = [];
      for (let d = 0; d < dirs; d++) {
        const [wIh, wHh, bIh, bHh] = this.weightsOf(l, d);
        const k = l * dirs + d;
        const gx = linear(layerIn, wIh, bIh);
        const r = rnnSequence(this.mode, gx, wHh, bHh, h0.select(0, k), c0 ? c0.select(0, k) : null, d === 1);
        outs.push(r.output);
        hs.push(r.hN);
        if (r.cN) cs.push(r.cN);
      }
      layerIn = dirs === 1 ? outs[0] : cat(outs, 2);
      if (this.dropout > 0 && this.training && l < this.numLayers - 1) layerIn = dropout(layerIn, this.dropout, true);
    }
    return { output: layerIn, hN: stack(hs, 0), cN: c0 ? stack(cs, 0) : null };
  }

  /** The output batched as the input was given. */
  protected finish(t: Tensor, batched: boolean, batchDim: number): Tensor {
    if (!batched) return t.squeeze(batchDim);
    return this.batchFirst && batchDim === 1 ? t.transpose(0, 1) : t;
  }

  override extraRepr(): string {
    let s = `${this.inputSize}, ${this.hiddenSize}`;
    if (this.numLayers !== 1) s += `, num_layers=${this.numLayers}`;
    if (this.mode === 'rnn_relu') s += ", nonlinearity='relu'";
    if (!this.bias) s += `, bias=${pyRepr(false)}`;
    if (this.batchFirst) s += `, batch_first=${pyRepr(true)}`;
    if (this.dropout !== 0) s += `, dropout=${pyRepr(this.dropout, true)}`;
    if (this.bidirectional) s += `, bidirectional=${pyRepr(true)}`;
    return s;
  }
}

const KEYS = ['numLayers', 'bias', 'batchFirst', 'dropout', 'bidirectional', 'dtype', 'device'] as const;

/**
 * A multi-layer Elman RNN, h_t = tanh or relu(x_t·W_ihᵀ + b_ih + h_{t−1}·W_hhᵀ + b_hh), as
 * torch.nn.RNN: forward(input, h0?) → [output, hN].
 */
export class RNN extends RNNBase {
  constructor(inputSize: number, hiddenSize: number, options: RNNOptions = {}) {
    const o = checkOptions('RNN', options, [...KEYS, 'nonlinearity']);
    const nl = checkChoice('RNN', 'nonlinearity', o.nonlinearity ?? 'tanh', ['tanh', 'relu'] as const);
    super('RNN', nl === 'tanh' ? 'rnn_tanh' : 'rnn_relu', inputSize, hiddenSize, o);
  }

  /** input [T, B, I] ([B, T, I] batchFirst, or unbatched [T, I]); h0 [layers·dirs, B, H] ([layers·dirs, H]). */
  forward(input: Tensor, h0: Tensor | null = null): [Tensor, Tensor] {
    const { x, batched } = this.prepare(input);
    const r = this.run(x, this.state('h0', h0, x, batched), null);
    return [this.finish(r.output, batched, 1), batched ? r.hN : r.hN.squeeze(1)];
  }
}

/**
 * A multi-layer LSTM (gates i, f, g, o; c_t = f·c_{t−1} + i·g, h_t = o·tanh(c_t)), as
 * torch.nn.LSTM: forward(input, [h0, c0]?) → [output, [hN, cN]].
 */
export class LSTM extends RNNBase {
  constructor(inputSize: number, hiddenSize: number, options: Omit<RNNOptions, 'nonlinearity'> = {}) {
    super('LSTM', 'lstm', inputSize, hiddenSize, checkOptions('LSTM', options, [...KEYS, 'projSize']));
  }

  forward(input: Tensor, hx: readonly [Tensor, Tensor] | null = null): [Tensor, [Tensor, Tensor]] {
    const { x, batched } = this.prepare(input);
    if (hx !== null && (!Array.isArray(hx) || hx.length !== 2)) throw flockError('ERR_ARG', this.op, 'hx must be a pair [h0, c0] or null');
    const r = this.run(x, this.state('h0', hx?.[0], x, batched), this.state('c0', hx?.[1], x, batched));
    const cN = r.cN as Tensor;
    return [this.finish(r.output, batched, 1), batched ? [r.hN, cN] : [r.hN.squeeze(1), cN.squeeze(1)]];
  }
}

/**
 * A multi-layer GRU (gates r, z, n; n = tanh(W_in x + b_in + r·(W_hn h + b_hn)),
 * h_t = (1 − z)·n + z·h_{t−1}), as torch.nn.GRU: forward(input, h0?) → [output, hN].
 */
export class GRU extends RNNBase {
  constructor(inputSize: number, hiddenSize: number, options: Omit<RNNOptions, 'nonlinearity'> = {}) {
    super('GRU', 'gru', inputSize, hiddenSize, checkOptions('GRU', options, KEYS));
  }

  forward(input: Tensor, h0: Tensor | null = null): [Tensor, Tensor] {
    const { x, batched } = this.prepare(input);
    const r = this.run(x, this.state('h0', h0, x, batched), null);
    return [this.finish(r.output, batched, 1), batched ? r.hN : r.hN.squeeze(1)];
  }
}
