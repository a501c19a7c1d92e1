/**
 * Reverse-mode autograd over the recorded graph. Tensors are processed in reverse topological
 * order, so a tensor's gradient is complete when it is reached; a leaf's gradient is final when
 * its last consumer has run, and its hooks fire right then (data-parallel training starts its
 * allreduce from there while the rest of backward continues).
 */
import { native } from '../native';
import { Tensor } from '../tensor';
import { keep, tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { baseOf, bumpVersions } from '../dispatch/version';
import { withoutAutocast } from '../dispatch/autocast';
import { argError, checkOptions, describe, flockError } from '../errors';

function shapeStr(s: readonly number[]): string {
  return `[${s.join(',')}]`;
}

/** Options of {@link backward}. */
export interface BackwardOptions {
  /** Keep what the graph's ops saved, so backward can run through it again (default false). */
  retainGraph?: boolean;
}

function isTensor(v: unknown): v is Tensor {
  return typeof v === 'object' && v !== null && 'handle' in v && 'gradFn' in v && Array.isArray((v as Tensor).shape);
}

/** `backward(grad?, options?)` or `backward(options)`, validated. */
function backwardArgs(gradOrOptions: unknown, options: unknown): { grad: Tensor | undefined; retainGraph: boolean } {
  let grad = gradOrOptions;
  let opts = options;
  if (
    options === undefined &&
    typeof grad === 'object' &&
    grad !== null &&
    !isTensor(grad) &&
    Object.getPrototypeOf(grad) === Object.prototype
  ) {
    opts = grad;
    grad = undefined;
  }
  if (grad !== undefined && grad !== null && !isTensor(grad))
    throw argError('backward', `grad must be a Tensor or undefined, got ${describe(grad)}`);
  const { retainGraph = false } = checkOptions<BackwardOptions>('backward', opts as BackwardOptions | undefined, ['retainGraph']);
  if (typeof retainGraph !== 'boolean') throw argError('backward', `retainGraph must be a boolean, got ${describe(retainGraph)}`);
  return { grad: grad ?? undefined, retainGraph };
}

/**
 * Runs backward from `root`. Unless `retainGraph`, each node is released once it has run (its
 * saved tensors freed), so a later backward that reaches it throws, as PyTorch's does.
 */
export function backward(root: Tensor, gradOrOptions?: unknown, options?: unknown): void {
  const { grad, retainGraph } = backwardArgs(gradOrOptions, options);
  if (!root.requiresGrad)
    throw flockError(
      'ERR_AUTOGRAD',
      'backward',
      'the tensor does not require grad and has no gradFn (call requiresGrad_() on a leaf it depends on)',
    );
  if (grad === undefined && root.numel() !== 1)
    throw flockError(
      'ERR_SHAPE',
      'backward',
      `grad can be implicitly created only for one-element outputs, got shape ${shapeStr(root.shape)}`,
    );
  if (grad !== undefined && (grad.shape.length !== root.shape.length || grad.shape.some((s, i) => s !== root.shape[i])))
    throw flockError('ERR_SHAPE', 'backward', `grad shape ${shapeStr(grad.shape)} does not match output shape ${shapeStr(root.shape)}`);

  // Topological order (iterative DFS) and the number of consumers of each tensor. Every node is
  // checked (released, or saved tensors changed in place) before any gradient is computed, so a
  // refused backward leaves every .grad as it was.
  const order: Tensor[] = [];
  const consumers = new Map<Tensor, number>();
  const visited = new Set<Tensor>();
  const stack: [Tensor, number][] = [[root, 0]];
  visited.add(root);
  root.gradFn?.check();
  while (stack.length) {
    const top = stack[stack.length - 1];
    const [t, i] = top;
    const inputs = t.gradFn ? t.gradFn.inputs : [];
    if (i < inputs.length) {
      top[1]++;
      const inp = inputs[i];
      if (!inp.requiresGrad) continue;
      consumers.set(inp, (consumers.get(inp) ?? 0) + 1);
      if (!visited.has(inp)) {
        visited.add(inp);
        inp.gradFn?.check();
        stack.push([inp, 0]);
      }
    } else {
      stack.pop();
      order.push(t);
    }
  }

  // Gradients run in the dtypes their forward ops chose: autocast stays off in backward, as PyTorch's.
  const graph = new Set(order);
  noGrad(() =>
    withoutAutocast(() =>
      tidy(() => {
        const grads = new Gradients(graph, grad);
        grads.add(root, grad ?? grads.own(onesLike(root)));
        for (let k = order.length - 1; k >= 0; k--) {
          const t = order[k];
          let g = grads.take(t);
          if (!g) continue;
          for (const hook of t._hooks) {
            const replaced = hook(g);
            if (replaced && replaced !== g) {
              grads.hold(replaced);
              grads.release(g);
              g = replaced;
            }
          }
          if (!t.gradFn) {
            if (accumulate(t, g, grads.adoptable(g))) grads.forget(g);
            else grads.release(g);
            continue;
          }
          const node = t.gradFn;
          const into = accumulationTargets(node.inputs, consumers);
          // Its own scope, so what the node's backward makes on the way (not its results) goes at once.
          const inputGrads = tidy(() => node.backward(g as Tensor, into));
          // Gradients the node added into a leaf's .grad itself are done: nothing holds them.
          const pending = into ? inputGrads.map((gi, i) => (gi && gi === into[i] ? null : gi)) : inputGrads;
          for (const gi of pending) {
            if (!gi) continue;
            if (gi !== g) grads.own(gi);
            grads.hold(gi);
          }
          node.inputs.forEach((inp, i) => {
            const gi = pending[i];
            if (gi && inp.requiresGrad) grads.add(inp, gi);
            else if (!gi && inputGrads[i]) bumpVersions('backward', [inputGrads[i] as Tensor]);
          });
          // The incoming gradient is consumed (unless the node passed it on), and so are the
          // results no input takes; then the node's saved tensors go.
          grads.release(g);
          for (const gi of pending) if (gi) grads.release(gi);
          if (!retainGraph) node.release();
        }
      }),
    ),
  );
  // Nodes that no gradient reached did not run; they are freed all the same.
  if (!retainGraph) for (const t of order) t.gradFn?.release();
}

/**
 * The pending gradient of each tensor not yet reached. A gradient the engine made (a node's result
 * or a sum; never the caller's, a hook's replacement or a tensor of the graph) is disposed as soon
 * as nothing refers to it any more, as PyTorch
 * releases a non-leaf's gradient once its node has consumed it: backward holds only the gradients
 * still in flight rather than every one it computed. One tensor object may be pending for several
 * inputs (add passes its gradient on to both) and be in use at the same time, so references are
 * counted per object: one per pending entry and one per use in hand.
 */
class Gradients {
  readonly #pending = new Map<Tensor, Tensor>();
  readonly #refs = new Map<Tensor, number>();
  readonly #owned = new Set<Tensor>();

  constructor(
    private readonly graph: ReadonlySet<Tensor>,
    private readonly given: Tensor | undefined,
  ) {}

  /** Marks `g` as made by the engine, so its last release disposes it. Returns `g`. */
  own(g: Tensor): Tensor {
    if (g !== this.given && !this.graph.has(g)) this.#owned.add(g);
    return g;
  }

  hold(g: Tensor): void {
    this.#refs.set(g, (this.#refs.get(g) ?? 0) + 1);
  }

  /** Ends one reference to `g`; the last one disposes it when the engine made it. */
  release(g: Tensor): void {
    const n = (this.#refs.get(g) ?? 0) - 1;
    if (n > 0) {
      this.#refs.set(g, n);
      return;
    }
    this.#refs.delete(g);
    if (this.#owned.delete(g)) g.dispose();
  }

  /** Adds `g` to `t`'s pending gradient (the sum replaces the previous one, which is released). */
  add(t: Tensor, g: Tensor): void {
    const prev = this.#pending.get(t);
    const next = prev ? this.own(prev.add(g)) : g;
    this.#pending.set(t, next);
    this.hold(next);
    if (prev) this.release(prev);
  }

  /**
   * Whether the engine may hand `g` itself to a leaf as its `.grad` (then never disposing it), as
   * PyTorch's AccumulateGrad takes a gradient nothing else refers to instead of copying it: the engine
   * made it, this is its last use, and it is not a view of another gradient's storage.
   */
  adoptable(g: Tensor): boolean {
    return this.#refs.get(g) === 1 && this.#owned.has(g) && baseOf(g) === undefined;
  }

  /** Drops the engine's last reference to `g` without disposing it (a leaf took it). */
  forget(g: Tensor): void {
    this.#refs.delete(g);
    this.#owned.delete(g);
  }

  /** Removes and returns `t`'s pending gradient; its reference passes to the caller, who releases it. */
  take(t: Tensor): Tensor | undefined {
    const g = this.#pending.get(t);
    this.#pending.delete(t);
    return g;
  }
}

/** A plain Tensor (never a subclass such as Parameter, whose constructor differs) of ones. */
function onesLike(t: Tensor): Tensor {
  return new Tensor(native.full([...t.shape], t.dtype, t.device, 1));
}

/**
 * The gradients the engine itself stored in a leaf's `.grad`. Only these are added into in place:
 * one a strategy or the user assigned may share its storage with something else, so it is
 * replaced by the sum instead.
 */
const engineGrads = new WeakSet<Tensor>();

/**
 * Adds `g` into a leaf's `.grad`; the stored gradient outlives the backward pass. A gradient the
 * engine stored is added into in place (as PyTorch's AccumulateGrad does), so accumulating holds
 * no second copy of it. `adopt`: `g` is the engine's to give, so a leaf without a gradient takes it
 * as it is. Returns whether it did.
 */
function accumulate(leaf: Tensor, g: Tensor, adopt: boolean): boolean {
  const cur = leaf.grad && !leaf.grad.isDisposed ? leaf.grad : null;
  if (cur && engineGrads.has(cur) && g.dtype === cur.dtype && g.device === cur.device && sameShape(g.shape, cur.shape)) {
    cur.add_(g);
    return false;
  }
  let next: Tensor;
  if (cur) {
    next = cur.add(g);
    cur.dispose();
  } else if (adopt && g.dtype === leaf.dtype && g.device === leaf.device && sameShape(g.shape, leaf.shape)) {
    leaf.grad = keep(g);
    engineGrads.add(g);
    return true;
  } else {
    // Own storage, so later in-place optimizer updates never alias an intermediate.
    next = g.shape.length === leaf.shape.length && g.dtype === leaf.dtype ? g.clone() : g.to(leaf.dtype).reshape([...leaf.shape]);
  }
  leaf.grad = keep(next);
  engineGrads.add(next);
  return false;
}

/**
 * The `.grad` each input's gradient may be added into by the node itself (see BackwardFn), or
 * undefined when none may: a leaf this node alone consumes in this backward, with no hooks (they
 * see the gradient before it is accumulated), whose `.grad` is one the engine stored (so nothing
 * else shares it) of the leaf's dtype, device and shape. The result is the value adding afterwards
 * gives; the node only saves the pass and the temporary.
 */
function accumulationTargets(inputs: readonly Tensor[], consumers: ReadonlyMap<Tensor, number>): (Tensor | null)[] | undefined {
  let into: (Tensor | null)[] | undefined;
  for (let i = 0; i < inputs.length; i++) {
    const t = inputs[i];
    if (t.gradFn || !t.requiresGrad || t._hooks.length > 0 || consumers.get(t) !== 1) continue;
    const cur = t.grad;
    if (!cur || cur.isDisposed || !engineGrads.has(cur)) continue;
    if (cur.dtype !== t.dtype || cur.device !== t.device || !sameShape(cur.shape, t.shape)) continue;
    into ??= inputs.map(() => null);
    into[i] = cur;
  }
  return into;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}
