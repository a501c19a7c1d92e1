/**
 * Backward through graphs that communicate. A collective's result may be read only after its Work
 * resolves (the ring backend runs it on its own thread, NCCL is issued after the compute queued
 * before it), and the autograd engine is synchronous, so a node whose backward needs a collective
 * (copy-to-parallel's allreduce, scatter's allgather) is a {@link CommNode}: `loss.backward()`
 * refuses such a graph before computing anything, and {@link backward} walks it with the same
 * order, hooks and accumulation as the engine, awaiting those nodes' collectives. Intermediate
 * gradients are left to the garbage collector: a tidy scope cannot span the awaits.
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { Tensor as TensorClass } from '../../tensor';
import { keep, tidy } from '../../memory';
import { Node } from '../../autograd/node';
import { isGradEnabled, noGrad } from '../../autograd/grad_mode';
import { withoutAutocast } from '../../amp/autocast';
import { checkOptions, flockError } from '../../errors';

/** The gradient of a CommNode's single input, given its output's; resolves once the collective has run. */
export type AsyncBackwardFn = (grad: Tensor) => Promise<Tensor>;

let walking = 0;

/** A graph node whose backward runs a collective; only {@link backward} can run it. */
export class CommNode extends Node {
  readonly #run: AsyncBackwardFn;

  constructor(name: string, input: Tensor, run: AsyncBackwardFn) {
    super(name, [input], () => {
      throw notHere(name);
    });
    this.#run = run;
  }

  override check(): void {
    if (walking === 0) throw notHere(this.name);
    super.check();
  }

  /** @internal */
  async run(grad: Tensor): Promise<Tensor> {
    this.check();
    return this.#run(grad);
  }
}

function notHere(name: string) {
  return flockError(
    'ERR_AUTOGRAD',
    'backward',
    `the graph holds ${name}, whose gradient needs a collective across the tensor-parallel group; ` +
      'run `await fl.parallel.tensor.backward(loss)` instead of loss.backward()',
  );
}

/** Gives `out` a CommNode when grad mode is on and `input` requires grad. */
export function recordComm(out: Tensor, name: string, input: Tensor, run: AsyncBackwardFn): Tensor {
  if (!isGradEnabled() || !input.requiresGrad) return out;
  out.requiresGrad = true;
  out.gradFn = new CommNode(name, input, run);
  return out;
}

/** Options of {@link backward}. */
export interface TensorParallelBackwardOptions {
  /** Keep what the graph's ops saved, so backward can run through it again (default false). */
  retainGraph?: boolean;
}

/**
 * Backward from `root` (a one-element loss, or any tensor with `grad` of its shape) through a graph
 * that may hold tensor-parallel collectives. Every rank of each group involved must call it on
 * the same graph. Leaf gradients accumulate into `.grad` and leaf hooks fire as with
 * `root.backward()`.
 */
export async function backward(
  root: Tensor,
  gradOrOptions?: Tensor | null | TensorParallelBackwardOptions,
  options: TensorParallelBackwardOptions = {},
): Promise<void> {
  const op = 'parallel.tensor.backward';
  // backward(root, options), as root.backward(options).
  let grad: Tensor | null | undefined;
  if (gradOrOptions instanceof TensorClass || gradOrOptions === null || gradOrOptions === undefined) grad = gradOrOptions;
  else if (typeof gradOrOptions === 'object' && Object.getPrototypeOf(gradOrOptions) === Object.prototype) options = gradOrOptions;
  else throw flockError('ERR_ARG', op, 'grad must be a Tensor, null or undefined');
  const { retainGraph = false } = checkOptions(op, options, ['retainGraph']);
  if (typeof retainGraph !== 'boolean') throw flockError('ERR_ARG', op, 'retainGraph must be a boolean');
  if (!(root instanceof TensorClass)) throw flockError('ERR_ARG', op, 'root must be a Tensor');
  if (!root.requiresGrad) throw flockError('ERR_AUTOGRAD', op, 'the tensor does not require grad and has no gradFn');
  if ((grad === undefined || grad === null) && root.numel() !== 1)
    throw flockError('ERR_SHAPE', op, `grad can be implicitly created only for one-element outputs, got shape [${root.shape.join(',')}]`);
  if (grad && (grad.shape.length !== root.shape.length || grad.shape.some((s, i) => s !== root.shape[i])))
    throw flockError('ERR_SHAPE', op, `grad shape [${grad.shape.join(',')}] does not match output shape [${root.shape.join(',')}]`);

  walking++;
  let order: Tensor[];
  try {
    order = topoOrder(root);
  } finally {
    walking--;
  }
  const grads = new Map<Tensor, Tensor>();
  const put = (t: Tensor, g: Tensor) => {
    const prev = grads.get(t);
    // Not disposed when replaced: an op may hand the same tensor to several inputs (add's backward).
    grads.set(t, keep(prev ? noGrad(() => prev.add(g)) : g));
  };
  put(root, grad ? grad.detach() : new TensorClass(native.full([...root.shape], root.dtype, root.device, 1)));
  try {
    for (let k = order.length - 1; k >= 0; k--) {
      const t = order[k];
      let g = grads.get(t);
      grads.delete(t);
      if (!g) continue;
      for (const hook of t._hooks) {
        const replaced = noGrad(() => hook(g as Tensor));
        if (replaced) g = keep(replaced);
      }
      if (!t.gradFn) {
        accumulate(t, g);
        continue;
      }
      const node = t.gradFn;
      let inputGrads: (Tensor | null)[];
      if (node instanceof CommNode) {
        walking++;
        try {
          inputGrads = [keep(await node.run(g))];
        } finally {
          walking--;
        }
      } else {
        const gg = g;
        inputGrads = noGrad(() => withoutAutocast(() => tidy(() => node.backward(gg))));
        for (const x of inputGrads) if (x) keep(x);
      }
      node.inputs.forEach((inp, i) => {
        const gi = inputGrads[i];
        if (gi && inp.requiresGrad) put(inp, gi);
      });
      if (!retainGraph) node.release();
    }
  } finally {
    if (!retainGraph) for (const t of order) t.gradFn?.release();
  }
}

function topoOrder(root: Tensor): Tensor[] {
  const order: Tensor[] = [];
  const visited = new Set<Tensor>([root]);
  const stack: [Tensor, number][] = [[root, 0]];
  root.gradFn?.check();
  while (stack.length) {
    const top = stack[stack.length - 1];
    const [t, i] = top;
    const inputs = t.gradFn ? t.gradFn.inputs : [];
    if (i < inputs.length) {
      top[1]++;
      const inp = inputs[i];
      if (!inp.requiresGrad || visited.has(inp)) continue;
      visited.add(inp);
      inp.gradFn?.check();
      stack.push([inp, 0]);
    } else {
      stack.pop();
      order.push(t);
    }
  }
  return order;
}

function accumulate(leaf: Tensor, g: Tensor): void {
  let next: Tensor;
  if (leaf.grad && !leaf.grad.isDisposed) {
    next = noGrad(() => (leaf.grad as Tensor).add(g));
    leaf.grad.dispose();
  } else {
    next = g.shape.length === leaf.shape.length && g.dtype === leaf.dtype ? g.clone() : g.to(leaf.dtype).reshape([...leaf.shape]);
  }
  leaf.grad = keep(next);
}
