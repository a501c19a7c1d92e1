/** Conv2d and ConvTranspose2d layers (weights and bias initialised as PyTorch's). */
import type { Tensor } from '../tensor';
import { tensor, zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { defaultLayerInit_ } from './init';
import { conv2d, convGeometry, convTranspose2d } from './functional/conv';
import { pair, tensorArg, tensorOptions, type Pair } from './functional/args';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkChoice, checkInt } from '../validate';
import { shapeStr } from '../ops/util';

/** How Conv2d fills the border it pads: with zeros, or from the input itself (as PyTorch's padding_mode). */
export type PaddingMode = 'zeros' | 'reflect' | 'replicate' | 'circular';
const PADDING_MODES: readonly PaddingMode[] = ['zeros', 'reflect', 'replicate', 'circular'];

export interface Conv2dLayerOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  groups?: number;
  bias?: boolean;
  /** Default 'zeros'; 'reflect', 'replicate' and 'circular' pad from the input (Conv2d only). */
  paddingMode?: PaddingMode;
  dtype?: DType;
  device?: string;
}

const LAYER_KEYS = ['stride', 'padding', 'dilation', 'groups', 'bias', 'paddingMode', 'dtype', 'device'] as const;

function checkLayer(op: string, inC: unknown, outC: unknown, o: Conv2dLayerOptions) {
  const inChannels = checkInt(op, 'inChannels', inC, 1);
  const outChannels = checkInt(op, 'outChannels', outC, 1);
  const g = convGeometry(op, o);
  if (inChannels % g.groups || outChannels % g.groups)
    throw flockError('ERR_RANGE', op, `inChannels ${inChannels} and outChannels ${outChannels} must be divisible by groups ${g.groups}`);
  if (o.bias !== undefined) checkBool(op, 'bias', o.bias);
  return { g, ...tensorOptions(op, o) };
}

/** Source row of each padded position along a dim of `size` (reflect excludes the edge, as PyTorch). */
function padIndex(size: number, pad: number, mode: Exclude<PaddingMode, 'zeros'>): Int32Array {
  return Int32Array.from({ length: size + 2 * pad }, (_, j) => {
    const i = j - pad;
    if (mode === 'circular') return ((i % size) + size) % size;
    if (mode === 'replicate') return Math.min(Math.max(i, 0), size - 1);
    const r = Math.abs(i);
    return r < size ? r : 2 * (size - 1) - r;
  });
}

/**
 * Pads dims 2 and 3 of x by gathering rows and columns of x itself: index selects that autograd
 * already differentiates (their backward scatter-adds into the source rows), so no pad kernel.
 */
function padFromInput(op: string, x: Tensor, padding: [number, number], mode: Exclude<PaddingMode, 'zeros'>): Tensor {
  for (const d of [0, 1] as const) {
    const size = x.shape[2 + d],
      p = padding[d];
    if (p === 0) continue;
    if ((mode === 'reflect' && p >= size) || (mode === 'circular' && p > size) || size === 0)
      throw flockError(
        'ERR_SHAPE',
        op,
        `paddingMode '${mode}' needs padding ${mode === 'reflect' ? '<' : '≤'} the input size: padding ${shapeStr(padding)}, input ${shapeStr(x.shape)}`,
      );
  }
  let y = x;
  for (const d of [0, 1] as const) {
    if (padding[d] === 0) continue;
    const idx = tensor(padIndex(x.shape[2 + d], padding[d], mode), { device: x.device });
    y = y.indexSelect(2 + d, idx);
  }
  return y;
}

/** A convolution layer's settings as PyTorch's `_ConvNd.extra_repr` writes them: defaults left out. */
function convRepr(
  inChannels: number,
  outChannels: number,
  kernelSize: [number, number],
  o: Conv2dLayerOptions & { outputPadding?: Pair },
  bias: boolean,
): string {
  const p = (v: Pair | undefined, d: number): [number, number] => pair('repr', 'v', v ?? d, 0);
  const isAll = (v: [number, number], d: number) => v[0] === d && v[1] === d;
  let s = `${inChannels}, ${outChannels}, kernel_size=${pyRepr(kernelSize)}, stride=${pyRepr(p(o.stride, 1))}`;
  if (!isAll(p(o.padding, 0), 0)) s += `, padding=${pyRepr(p(o.padding, 0))}`;
  if (!isAll(p(o.dilation, 1), 1)) s += `, dilation=${pyRepr(p(o.dilation, 1))}`;
  if (!isAll(p(o.outputPadding, 0), 0)) s += `, output_padding=${pyRepr(p(o.outputPadding, 0))}`;
  if ((o.groups ?? 1) !== 1) s += `, groups=${o.groups}`;
  if (!bias) s += ', bias=False';
  if ((o.paddingMode ?? 'zeros') !== 'zeros') s += `, padding_mode=${o.paddingMode}`;
  return s;
}

export class Conv2d extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly kernelSize: [number, number];
  readonly paddingMode: PaddingMode;
  readonly options: Conv2dLayerOptions;

  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Pair,
    options: Conv2dLayerOptions = {},
  ) {
    super();
    const o = checkOptions('Conv2d', options, LAYER_KEYS);
    const { g, dtype, device } = checkLayer('Conv2d', inChannels, outChannels, o);
    this.kernelSize = pair('Conv2d', 'kernelSize', kernelSize, 1);
    this.paddingMode = checkChoice('Conv2d', 'paddingMode', o.paddingMode ?? 'zeros', PADDING_MODES);
    this.options = { ...o };
    this.weight = ownParameter(zeros([outChannels, inChannels / g.groups, ...this.kernelSize], { dtype, device }));
    this.bias = o.bias === false ? null : ownParameter(zeros([outChannels], { dtype, device }));
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    const { stride, padding, dilation, groups } = this.options;
    if (this.paddingMode === 'zeros') return conv2d(x, this.weight, this.bias, { stride, padding, dilation, groups });
    tensorArg('Conv2d', 'input', x);
    if (x.ndim !== 4) throw flockError('ERR_SHAPE', 'Conv2d', `expected a 4-D input [N, C, H, W], got ${shapeStr(x.shape)}`);
    const padded = padFromInput('Conv2d', x, pair('Conv2d', 'padding', padding ?? 0, 0), this.paddingMode);
    return conv2d(padded, this.weight, this.bias, { stride, padding: 0, dilation, groups });
  }

  override extraRepr(): string {
    return convRepr(this.inChannels, this.outChannels, this.kernelSize, this.options, this.bias !== null);
  }
}

export class ConvTranspose2d extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly kernelSize: [number, number];
  readonly options: Conv2dLayerOptions & { outputPadding?: Pair };

  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Pair,
    options: Conv2dLayerOptions & { outputPadding?: Pair } = {},
  ) {
    super();
    const o = checkOptions('ConvTranspose2d', options, [...LAYER_KEYS, 'outputPadding']);
    const { g, dtype, device } = checkLayer('ConvTranspose2d', inChannels, outChannels, o);
    this.kernelSize = pair('ConvTranspose2d', 'kernelSize', kernelSize, 1);
    pair('ConvTranspose2d', 'outputPadding', o.outputPadding ?? 0, 0);
    // PyTorch's ConvTranspose2d supports only zero padding too.
    if (o.paddingMode !== undefined && o.paddingMode !== 'zeros')
      throw argError(
        'ConvTranspose2d',
        `paddingMode must be 'zeros' (the only mode a transposed convolution supports), got ${describe(o.paddingMode)}`,
      );
    this.options = { ...o };
    this.weight = ownParameter(zeros([inChannels, outChannels / g.groups, ...this.kernelSize], { dtype, device }));
    this.bias = o.bias === false ? null : ownParameter(zeros([outChannels], { dtype, device }));
    // PyTorch computes the transposed layer's fan-in from weight dim 1 as well.
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    const { stride, padding, dilation, groups, outputPadding } = this.options;
    return convTranspose2d(x, this.weight, this.bias, { stride, padding, dilation, groups, outputPadding });
  }

  override extraRepr(): string {
    return convRepr(this.inChannels, this.outChannels, this.kernelSize, this.options, this.bias !== null);
  }
}
