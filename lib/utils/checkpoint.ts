/**
 * Gradient checkpointing, as torch.utils.checkpoint: the forward runs without recording a graph,
 * so only the inputs are kept; backward runs the function again (with the random-number state and
 * the autocast state of the first run, so dropout masks and dtypes match) and backpropagates
 * through the recomputed graph. Memory falls from every activation of the wrapped part to its
 * inputs, for the cost of a second forward.
 *
 * As PyTorch's (reentrant) checkpoint, the part's parameters receive gradients when backward
 * reaches it: some input must require grad, or `fn` must be a Module (its parameters then count).
 * Parameter gradients are accumulated during the recompute, so gradient hooks (data-parallel
 * bucket allreduces) fire from there, still during backward.
 */
import { Tensor } from '../tensor';
import { record } from '../autograd/node';
import { backward } from '../autograd/engine';
import { enableGrad, isGradEnabled, noGrad } from '../autograd/grad_mode';
import { getRngState, setRngState } from '../random';
import { autocastState, withAutocastStates } from '../amp/autocast';
import { argError, describe } from '../errors';
import { tidy } from '../memory';
import { Module } from '../nn/module';
import { type Sequential, runChain } from '../nn/container';
import { checkNumber } from '../validate';

type Fn = (...args: unknown[]) => unknown;

function run(op: string, call: (args: unknown[]) => unknown, inputs: unknown[], params: readonly Tensor[]): Tensor {
  if (!isGradEnabled()) return asTensor(op, call(inputs));
  const rng = getRngState();
  const states = [
    autocastState('cpu') ?? { device: 'cpu' as const, dtype: 'bf16' as const, enabled: false, cacheEnabled: true },
    autocastState('cuda') ?? { device: 'cuda' as const, dtype: 'f16' as const, enabled: false, cacheEnabled: true },
  ];
  // tidy frees the part's intermediates now rather than at the next garbage collection.
  const out = asTensor(
    op,
    noGrad(() => tidy(() => call(inputs))),
  );
  const tensors = inputs.filter((x): x is Tensor => x instanceof Tensor);
  return record(out, op, [...tensors, ...params], (g) => {
    const now = getRngState();
    setRngState(rng);
    try {
      // The recomputed activations are freed as soon as this part's gradients are out.
      return tidy(() => {
        const detached = new Map<Tensor, Tensor>();
        for (const t of tensors) if (!detached.has(t)) detached.set(t, t.detach().requiresGrad_(t.requiresGrad));
        const again = inputs.map((x) => (x instanceof Tensor ? detached.get(x) : x));
        const y = asTensor(
          op,
          enableGrad(() => withAutocastStates(states, () => call(again))),
        );
        if (y.requiresGrad) backward(y, g);
        // A tensor passed twice received its whole gradient once: give it to the first occurrence.
        const given = new Set<Tensor>();
        const grads = tensors.map((t) => {
          const d = detached.get(t) as Tensor;
          if (given.has(d) || !t.requiresGrad) return null;
          given.add(d);
          return d.grad;
        });
        return [...grads, ...params.map(() => null)];
      });
    } finally {
      setRngState(now);
    }
  });
}

function asTensor(op: string, v: unknown): Tensor {
  if (!(v instanceof Tensor)) throw argError(op, `the checkpointed function must return one Tensor, got ${describe(v)}`);
  return v;
}

/**
 * `fn(...inputs)`, keeping only the inputs for backward and recomputing the rest then. `fn` is a
 * function of the inputs or a Module (called as `fn.forward(...inputs)`); it must return one Tensor.
 */
export function checkpoint(fn: Fn | Module, ...inputs: unknown[]): Tensor {
  if (fn instanceof Module) {
    const m = fn as Module & { forward: Fn };
    return run('checkpoint', (xs) => m.forward(...xs), inputs, m.parameters());
  }
  if (typeof fn !== 'function') throw argError('checkpoint', `expected a function or a Module, got ${describe(fn)}`);
  return run('checkpoint', (xs) => fn(...xs), inputs, []);
}

/**
 * Runs the modules of `seq` on `x` in `segments` consecutive segments, checkpointing every segment
 * but the last (whose activations backward needs first anyway), as torch.utils.checkpoint_sequential.
 */
export function checkpointSequential(seq: Sequential, segments: number, x: Tensor): Tensor {
  const op = 'checkpointSequential';
  if (!(seq instanceof Module)) throw argError(op, `expected a Sequential, got ${describe(seq)}`);
  const mods = [...seq.children()] as Array<Module & { forward: Fn }>;
  checkNumber(op, 'segments', segments, { integer: true, min: 1, max: Math.max(1, mods.length) });
  if (!(x instanceof Tensor)) throw argError(op, `input must be a Tensor, got ${describe(x)}`);
  const size = Math.floor(mods.length / segments);
  let y: Tensor = x;
  let start = 0;
  for (let s = 0; s < segments; s++) {
    const end = s === segments - 1 ? mods.length : start + size;
    const part = mods.slice(start, end);
    const call = (xs: unknown[]) => runChain(part, xs[0]);
    y =
      s === segments - 1
        ? asTensor(op, call([y]))
        : run(
            op,
            call,
            [y],
            part.flatMap((m) => m.parameters()),
          );
    start = end;
  }
  return y;
}
