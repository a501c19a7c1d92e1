/** Upsample: F.interpolate as a layer, its options checked at construction. */
import type { Tensor } from '../tensor';
import { Module, pyRepr } from './module';
import { type InterpolateOptions, interpolateOptions, interpolateWith } from './functional/interpolate';

/**
 * Resizes [N, C, L], [N, C, H, W] or [N, C, D, H, W] inputs, as torch.nn.Upsample: `size` or
 * `scaleFactor`, `mode` (default 'nearest'), `alignCorners` and `recomputeScaleFactor` as interpolate's.
 */
export class Upsample extends Module {
  readonly #o: ReturnType<typeof interpolateOptions>;
  constructor(readonly options: InterpolateOptions = {}) {
    super();
    this.#o = interpolateOptions('Upsample', options);
  }
  forward(x: Tensor): Tensor {
    return interpolateWith('Upsample', x, this.#o);
  }
  override extraRepr(): string {
    const { size, scaleFactor, mode } = this.#o;
    const what = scaleFactor !== null ? `scale_factor=${pyRepr(scaleFactor, true)}` : `size=${pyRepr(size)}`;
    return `${what}, mode=${mode}`;
  }
}
