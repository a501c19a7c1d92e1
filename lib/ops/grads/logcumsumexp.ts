/**
 * The gradient of logcumsumexp, as PyTorch's logcumsumexp_backward: gx_j = Σ_{i≥j} g_i·exp(x_j − out_i),
 * summed in log space from the end, the positive and the negative parts of g apart so that each
 * sum is a logcumsumexp of finite logs.
 */
import type { Tensor } from '../../tensor';
import { logcumsumexp } from '../generated/kernel_ops';
import { defineGrads } from './table';

const LOWEST: Record<string, number> = { f32: -3.4028234663852886e38, f64: -Number.MAX_VALUE, bf16: -3.3895313892515355e38, f16: -65504 };

/** logcumsumexp from the end of `dim`. */
const fromEnd = (t: Tensor, dim: number) => logcumsumexp(t.flip(dim), dim).flip(dim);

defineGrads({
  logcumsumexp: {
    savesOutput: true,
    grad: (g, { input, out, dim }) => {
      const logAbs = g.abs().log();
      const lowest = LOWEST[g.dtype];
      const pos = fromEnd(logAbs.maskedFill(g.le(0), lowest).sub(out), dim)
        .add(input)
        .exp();
      const neg = fromEnd(logAbs.maskedFill(g.ge(0), lowest).sub(out), dim)
        .add(input)
        .exp();
      return [pos.sub(neg)];
    },
  },
});
