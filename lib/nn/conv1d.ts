/**
 * Conv1d and ConvTranspose1d layers: PyTorch's parameter names, shapes (weight [out, in/groups, k],
 * transposed [in, out/groups, k]) and initialisation, so state dicts move between the two.
 */
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { defaultLayerInit_ } from './init';
import { conv1d, convTranspose1d, type Single, single } from './functional/conv1d';
import { pad } from './functional/pad';
import { tensorOptions } from './functional/args';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkChoice, checkInt } from '../validate';
import type { PaddingMode } from './conv';

const PADDING_MODES: readonly PaddingMode[] = ['zeros', 'reflect', 'replicate', 'circular'];

export interface Conv1dLayerOptions {
  stride?: Single;
  padding?: Single;
  dilation?: Single;
  groups?: number;
  bias?: boolean;
  /** Default 'zeros'; 'reflect', 'replicate' and 'circular' pad from the input (Conv1d only). */
  paddingMode?: PaddingMode;
  dtype?: DType;
  device?: string;
}

export interface ConvTranspose1dLayerOptions extends Conv1dLayerOptions {
  outputPadding?: Single;
}

const KEYS = ['stride', 'padding', 'dilation', 'groups', 'bias', 'paddingMode', 'dtype', 'device'] as const;

/** The checked settings of a 1-d convolution layer. */
function checkLayer(op: string, inC: unknown, outC: unknown, kernelSize: unknown, o: ConvTranspose1dLayerOptions) {
  const inChannels = checkInt(op, 'inChannels', inC, 1);
  const outChannels = checkInt(op, 'outChannels', outC, 1);
  const geometry = {
    kernelSize: single(op, 'kernelSize', kernelSize, 1),
    stride: single(op, 'stride', o.stride ?? 1, 1),
    padding: single(op, 'padding', o.padding ?? 0, 0),
    dilation: single(op, 'dilation', o.dilation ?? 1, 1),
    outputPadding: single(op, 'outputPadding', o.outputPadding ?? 0, 0),
    groups: checkInt(op, 'groups', o.groups ?? 1, 1),
  };
  if (inChannels % geometry.groups || outChannels % geometry.groups)
    throw flockError(
      'ERR_RANGE',
      op,
      `inChannels ${inChannels} and outChannels ${outChannels} must be divisible by groups ${geometry.groups}`,
    );
  const bias = checkBool(op, 'bias', o.bias ?? true);
  const paddingMode = checkChoice(op, 'paddingMode', o.paddingMode ?? 'zeros', PADDING_MODES);
  return { inChannels, outChannels, geometry, bias, paddingMode, ...tensorOptions(op, o) };
}

type Geometry = ReturnType<typeof checkLayer>['geometry'];

/** A 1-d convolution layer's settings as PyTorch's `_ConvNd.extra_repr` writes them: defaults left out. */
function convRepr(inC: number, outC: number, g: Geometry, bias: boolean, paddingMode: PaddingMode): string {
  let s = `${inC}, ${outC}, kernel_size=${pyRepr([g.kernelSize])}, stride=${pyRepr([g.stride])}`;
  if (g.padding !== 0) s += `, padding=${pyRepr([g.padding])}`;
  if (g.dilation !== 1) s += `, dilation=${pyRepr([g.dilation])}`;
  if (g.outputPadding !== 0) s += `, output_padding=${pyRepr([g.outputPadding])}`;
  if (g.groups !== 1) s += `, groups=${g.groups}`;
  if (!bias) s += ', bias=False';
  if (paddingMode !== 'zeros') s += `, padding_mode=${paddingMode}`;
  return s;
}

/** 1-d convolution over [N, C, L], as torch.nn.Conv1d. */
export class Conv1d extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly kernelSize: number;
  readonly paddingMode: PaddingMode;
  readonly #g: Geometry;

  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Single,
    options: Conv1dLayerOptions = {},
  ) {
    super();
    const c = checkLayer('Conv1d', inChannels, outChannels, kernelSize, checkOptions('Conv1d', options, KEYS));
    this.#g = c.geometry;
    this.kernelSize = c.geometry.kernelSize;
    this.paddingMode = c.paddingMode;
    const t = { dtype: c.dtype, device: c.device };
    this.weight = ownParameter(zeros([outChannels, inChannels / c.geometry.groups, this.kernelSize], t));
    this.bias = c.bias ? ownParameter(zeros([outChannels], t)) : null;
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    const { stride, padding, dilation, groups } = this.#g;
    if (this.paddingMode === 'zeros') return conv1d(x, this.weight, this.bias, { stride, padding, dilation, groups });
    // As PyTorch: pad from the input itself, then convolve without padding.
    const padded = padding ? pad(x, [padding, padding], { mode: this.paddingMode }) : x;
    return conv1d(padded, this.weight, this.bias, { stride, dilation, groups });
  }

  override extraRepr(): string {
    return convRepr(this.inChannels, this.outChannels, this.#g, this.bias !== null, this.paddingMode);
  }
}

/** Transposed 1-d convolution over [N, C, L], as torch.nn.ConvTranspose1d. */
export class ConvTranspose1d extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly kernelSize: number;
  readonly #g: Geometry;

  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Single,
    options: ConvTranspose1dLayerOptions = {},
  ) {
    super();
    const o = checkOptions('ConvTranspose1d', options, [...KEYS, 'outputPadding']);
    const c = checkLayer('ConvTranspose1d', inChannels, outChannels, kernelSize, o);
    if (c.paddingMode !== 'zeros')
      throw argError(
        'ConvTranspose1d',
        `paddingMode must be 'zeros' (the only mode a transposed convolution supports), got ${describe(o.paddingMode)}`,
      );
    this.#g = c.geometry;
    this.kernelSize = c.geometry.kernelSize;
    const t = { dtype: c.dtype, device: c.device };
    this.weight = ownParameter(zeros([inChannels, outChannels / c.geometry.groups, this.kernelSize], t));
    this.bias = c.bias ? ownParameter(zeros([outChannels], t)) : null;
    // PyTorch computes the transposed layer's fan-in from weight dim 1 as well.
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    const { stride, padding, dilation, groups, outputPadding } = this.#g;
    return convTranspose1d(x, this.weight, this.bias, { stride, padding, dilation, groups, outputPadding });
  }

  override extraRepr(): string {
    return convRepr(this.inChannels, this.outChannels, this.#g, this.bias !== null, 'zeros');
  }
}
