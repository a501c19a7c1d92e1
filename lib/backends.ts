/** Backend switches, like torch.backends: settings that trade precision for speed. */
import { native } from './native';
import { argError, describe } from './errors';

/** Settings of the CUDA backend. */
export const cuda = {
  /**
   * When true, f32 matmuls on CUDA devices round their operands to TF32 (10 mantissa bits) and
   * run on tensor cores with f32 accumulation, like `torch.backends.cuda.matmul.allow_tf32`.
   * Default false. The setting is read when a matmul is queued; CPU matmuls ignore it.
   */
  get allowTF32(): boolean {
    return native.allowTF32();
  },
  set allowTF32(allow: boolean) {
    if (typeof allow !== 'boolean') throw argError('backends.cuda.allowTF32', `expected a boolean, got ${describe(allow)}`);
    native.setAllowTF32(allow);
  },
};
