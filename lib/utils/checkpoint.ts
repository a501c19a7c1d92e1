/**
 * Gradient checkpointing, as torch.utils.checkpoint: the forward keeps no activations of the
 * wrapped part, only what it reads; backward runs the function again (with the random-number state
 * and the autocast state of the first run, so dropout masks and dtypes match) and backpropagates
 * through the recomputed graph. Memory falls from every activation of the wrapped part to its
 * inputs, for the cost of a second forward.
 *
 * Two variants, as PyTorch's `use_reentrant`:
 * - non-reentrant (the default, PyTorch's recommended one): the first run records its graph only
 *   to find every tensor the part reads that requires grad (inputs, parameters it closes over,
 *   tensors with a history of their own), then drops it. Those tensors are the checkpoint node's
 *   inputs, so gradients reach closed-over parameters even when no input requires grad, and the
 *   outer backward accumulates them (hooks, data-parallel buckets) in its usual order: gradients
 *   are bit-identical to running without checkpointing. The part may return several tensors.
 * - reentrant (`{ useReentrant: true }`): the graph node's inputs are the tensor inputs (and a
 *   Module's parameters); a function's closed-over parameters get gradients only when some input
 *   requires grad (PyTorch's warning, "None of the inputs have requires_grad=True", is emitted
 *   otherwise), accumulated during the recompute. One output only.
 */
import { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { backward } from '../autograd/engine';
import { enableGrad, isGradEnabled, noGrad } from '../dispatch/grad_mode';
import { getRngState, setRngState } from '../random';
import { autocastState, withAutocastStates } from '../dispatch/autocast';
import { argError, checkOptions, describe, flockError } from '../errors';
import { currentScope, keep, tidy } from '../memory';
import { Module } from '../nn/module';
import { type Sequential, runChain } from '../nn/container';
import { checkBool, checkNumber } from '../validate';
import { full } from '../ops/creation';

type Fn = (...args: unknown[]) => unknown;

/** How a checkpointed part runs; see {@link checkpoint}. */
export interface CheckpointOptions {
  /** PyTorch's `use_reentrant`: false (default) for the non-reentrant variant, true for the old one. */
  useReentrant?: boolean;
  /** PyTorch's `preserve_rng_state` (default true): the recompute draws the random numbers the first run drew. */
  preserveRngState?: boolean;
}

const OPTION_KEYS = ['useReentrant', 'preserveRngState'] as const;

interface Settings {
  reentrant: boolean;
  preserveRng: boolean;
}

function settingsOf(op: string, options: CheckpointOptions | undefined): Settings {
  const o = checkOptions(op, options, [...OPTION_KEYS]);
  return {
    reentrant: checkBool(op, 'useReentrant', o.useReentrant ?? false),
    preserveRng: checkBool(op, 'preserveRngState', o.preserveRngState ?? true),
  };
}

function autocastStates() {
  return [
    autocastState('cpu') ?? { device: 'cpu' as const, dtype: 'bf16' as const, enabled: false, cacheEnabled: true },
    autocastState('cuda') ?? { device: 'cuda' as const, dtype: 'f16' as const, enabled: false, cacheEnabled: true },
  ];
}

let warnedNoGradInputs = false;

function runReentrant(
  op: string,
  call: (args: unknown[]) => unknown,
  inputs: unknown[],
  params: readonly Tensor[],
  preserveRng: boolean,
): Tensor {
  if (!isGradEnabled()) return asTensor(op, call(inputs));
  const rng = preserveRng ? getRngState() : null;
  const states = autocastStates();
  // tidy frees the part's intermediates now rather than at the next garbage collection.
  const out = asTensor(
    op,
    noGrad(() => tidy(() => call(inputs))),
  );
  const tensors = inputs.filter((x): x is Tensor => x instanceof Tensor);
  if (!warnedNoGradInputs && !tensors.some((t) => t.requiresGrad) && !params.some((p) => p.requiresGrad)) {
    warnedNoGradInputs = true;
    process.emitWarning(`${op}: None of the inputs have requiresGrad=true. Gradients will be null`, 'FlockmlWarning');
  }
  return record(out, op, [...tensors, ...params], (g) => {
    const now = getRngState();
    if (rng) setRngState(rng);
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

/** A part's result as a list: one Tensor, or an array whose Tensors are its outputs. */
function outputsOf(op: string, v: unknown): unknown[] {
  if (v instanceof Tensor) return [v];
  if (Array.isArray(v) && v.some((x) => x instanceof Tensor)) return v;
  throw argError(op, `the checkpointed function must return a Tensor or an array of Tensors, got ${describe(v)}`);
}

/**
 * The tensors requiring grad that the graph of `outs` reads from outside `scope` (the tidy scope the
 * part ran in): where backward through the part ends.
 */
function boundaryOf(outs: readonly unknown[], scope: unknown[] | null): Tensor[] {
  const found = new Set<Tensor>(),
    seen = new Set<Tensor>();
  const stack = outs.filter((t): t is Tensor => t instanceof Tensor && t.requiresGrad);
  while (stack.length) {
    const t = stack.pop() as Tensor;
    if (seen.has(t)) continue;
    seen.add(t);
    if (t._scope !== scope || !t.gradFn) {
      found.add(t);
      continue;
    }
    for (const i of t.gradFn.inputs) if (i.requiresGrad) stack.push(i);
  }
  // Tensors with a history first, leaves last: the engine runs a node's later inputs first, so the
  // part's parameters get their gradients (and data-parallel hooks fire) before the history runs on.
  const all = [...found];
  return [...all.filter((t) => t.gradFn), ...all.filter((t) => !t.gradFn)];
}

/**
 * The non-reentrant checkpoint. Backward recomputes the part with each boundary tensor cut loose
 * for the while (no history, no gradient, no hooks), so the nested backward stops there and leaves
 * each one's gradient in its `.grad`, which the node returns to the outer backward.
 */
function runNonReentrant(op: string, call: (args: unknown[]) => unknown, inputs: unknown[], preserveRng: boolean): unknown {
  if (!isGradEnabled()) return call(inputs);
  const rng = preserveRng ? getRngState() : null;
  const states = autocastStates();
  let boundary: Tensor[] = [];
  let single = false;
  // Whether each output is differentiable (so gets a node), found while its graph is still there.
  let wanted: boolean[] = [];
  // The first run records its graph only for boundaryOf; tidy frees its activations when it returns.
  const outs = tidy(() => {
    const scope = currentScope();
    const r = call(inputs);
    single = r instanceof Tensor;
    const list = outputsOf(op, r);
    boundary = boundaryOf(list, scope);
    wanted = list.map((v) => v instanceof Tensor && v.requiresGrad);
    // An output the part did not make (an input passed through) gets a tensor of its own.
    return list.map((v) => (v instanceof Tensor && v.requiresGrad && v._scope !== scope ? noGrad(() => v.reshape([...v.shape])) : v));
  });
  for (const [k, v] of outs.entries())
    if (wanted[k]) {
      const t = v as Tensor;
      t.gradFn = null;
      t.requiresGrad = false;
    }
  const ys = outs.filter((_, k) => wanted[k]) as Tensor[];
  if (boundary.length === 0 || ys.length === 0) return single ? outs[0] : outs;
  const grads: (Tensor | null)[] = outs.map(() => null);
  const recompute = (): (Tensor | null)[] => {
    const now = getRngState();
    if (rng) setRngState(rng);
    const cut = boundary.map((t) => ({ t, gradFn: t.gradFn, grad: t.grad, hooks: t._hooks }));
    try {
      return tidy(() => {
        for (const t of boundary) {
          t.gradFn = null;
          t.grad = null;
          t._hooks = [];
        }
        const inner = currentScope();
        const redone = outputsOf(
          op,
          enableGrad(() => withAutocastStates(states, () => call(inputs))),
        );
        const known = new Set(boundary);
        if (boundaryOf(redone, inner).some((t) => !known.has(t)))
          throw flockError(
            'ERR_AUTOGRAD',
            op,
            'the recomputed forward read tensors requiring grad that the first run did not; the checkpointed function must do the same work when run again',
          );
        const roots = redone.flatMap((y, k) =>
          y instanceof Tensor && y.requiresGrad && grads[k] ? [[y, grads[k] as Tensor] as const] : [],
        );
        if (roots.length === 1) backward(roots[0][0], roots[0][1]);
        // Several outputs: one backward of Σ⟨y_k, g_k⟩, whose gradient at each y_k is g_k exactly.
        else if (roots.length > 1) backward(enableGrad(() => roots.map(([y, g]) => y.mul(g).sum()).reduce((x, z) => x.add(z))));
        return boundary.map((t) => (t.grad && !t.grad.isDisposed ? t.grad : null));
      });
    } finally {
      for (const c of cut) {
        c.t.gradFn = c.gradFn;
        c.t.grad = c.grad;
        c.t._hooks = c.hooks;
      }
      setRngState(now);
      if (ys.length > 1) for (const g of grads) g?.dispose();
      grads.fill(null);
    }
  };
  if (ys.length === 1) {
    const k = outs.indexOf(ys[0]);
    record(
      ys[0],
      op,
      boundary,
      (g) => {
        grads[k] = g;
        return recompute();
      },
      { savesOutput: false },
    );
  } else {
    // One node for all outputs (an anchor they all feed), so the part is recomputed once, after
    // every output's gradient is in: each output's node keeps a copy of its gradient for it.
    const anchor = noGrad(() => full([1], 0));
    record(anchor, op, boundary, () => recompute(), { savesOutput: false });
    for (const y of ys) {
      const k = outs.indexOf(y);
      record(
        y,
        op,
        [anchor],
        (g) => {
          grads[k] = keep(g.clone());
          return [full([1], 0)];
        },
        { savesOutput: false },
      );
    }
  }
  return single ? outs[0] : outs;
}

/** A trailing plain object naming a checkpoint option is the options, not an input. */
function splitOptions(args: unknown[]): [unknown[], CheckpointOptions | undefined] {
  const last = args[args.length - 1];
  if (
    last !== null &&
    typeof last === 'object' &&
    Object.getPrototypeOf(last) === Object.prototype &&
    OPTION_KEYS.some((k) => Object.hasOwn(last, k))
  )
    return [args.slice(0, -1), last as CheckpointOptions];
  return [args, undefined];
}

/**
 * `fn(...inputs)`, keeping only what it reads for backward and recomputing the rest then, as
 * torch.utils.checkpoint. `fn` is a function or a Module (called as `fn.forward(...inputs)`); it
 * returns a Tensor, or (non-reentrant only) an array of Tensors. Options go last, as an object
 * naming `useReentrant` (default false: parameters `fn` closes over get gradients whatever the
 * inputs) or `preserveRngState` (default true): `checkpoint(block, x, { useReentrant: true })`.
 */
export function checkpoint(fn: Module, ...inputs: unknown[]): Tensor;
export function checkpoint<R extends Tensor | readonly unknown[]>(fn: (...args: never[]) => R, ...inputs: unknown[]): R;
export function checkpoint(fn: ((...args: never[]) => unknown) | Module, ...args: unknown[]): unknown {
  const op = 'checkpoint';
  const [inputs, options] = splitOptions(args);
  const { reentrant, preserveRng } = settingsOf(op, options);
  let call: (xs: unknown[]) => unknown;
  let params: Tensor[] = [];
  if (fn instanceof Module) {
    const m = fn as Module & { forward: Fn };
    call = (xs) => m.forward(...xs);
    params = m.parameters();
  } else if (typeof fn === 'function') {
    const f = fn as Fn;
    call = (xs) => f(...xs);
  } else {
    throw argError(op, `expected a function or a Module, got ${describe(fn)}`);
  }
  return reentrant ? runReentrant(op, call, inputs, params, preserveRng) : runNonReentrant(op, call, inputs, preserveRng);
}

/**
 * Runs the modules of `seq` on `x` in `segments` consecutive segments, checkpointing every segment
 * but the last (whose activations backward needs first anyway), as torch.utils.checkpoint_sequential;
 * `options` as {@link checkpoint}'s.
 */
export function checkpointSequential(seq: Sequential, segments: number, x: Tensor, options?: CheckpointOptions): Tensor {
  const op = 'checkpointSequential';
  const { reentrant, preserveRng } = settingsOf(op, options);
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
        : reentrant
          ? runReentrant(
              op,
              call,
              [y],
              part.flatMap((m) => m.parameters()),
              preserveRng,
            )
          : asTensor(op, runNonReentrant(op, call, [y], preserveRng));
    start = end;
  }
  return y;
}
