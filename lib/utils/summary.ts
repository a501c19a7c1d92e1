/**
 * summary(model, input): the layer table torchinfo prints for a PyTorch model — every module called
 * by one forward pass (in call order, as a tree), its output shape and parameter count, then the
 * totals and the memory estimate — returned as text and as data.
 */
import { noGrad } from '../dispatch/grad_mode';
import { tidy } from '../memory';
import { Tensor } from '../tensor';
import { itemSize, isDType, isFloating, type CanonicalDType, type DType, canonicalDType } from '../dtype';
import { rand, zeros } from '../ops/creation';
import { Module } from '../nn/module';
import { Linear } from '../nn/linear';
import { Conv2d, ConvTranspose2d } from '../nn/conv';
import { Conv1d, ConvTranspose1d } from '../nn/conv1d';
import { argError, checkOptions, describe } from '../errors';
import { checkBool, checkDevice, checkInt, checkSizes } from '../validate';

export interface SummaryOptions {
  /** Rows deeper than this are folded into their ancestor's count (default 3, as torchinfo). */
  depth?: number;
  /** The dtype of inputs made from shapes (default 'f32'; integer dtypes give zeros). */
  dtype?: DType;
  /** The device of inputs made from shapes (default: the model's first parameter's, else 'cpu'). */
  device?: string;
  /** Print the table with console.log (default true, as torchinfo's verbose=1). */
  print?: boolean;
}

/** One module call of the forward pass. */
export interface SummaryLayer {
  /** The module's dotted name in the model ('' for the model itself). */
  name: string;
  /** Its class name. */
  type: string;
  /** 0 for the model, 1 for its children, … */
  depth: number;
  /** torchinfo's depth-index: 1-3 is the third row at depth 1. */
  index: string;
  /** The shape of the output, or of each tensor output when it returns several. */
  outputShape: number[] | number[][];
  /** Parameters of the module and its descendants (each shared parameter once). */
  numParams: number;
  trainableParams: number;
}

export interface ModelSummary {
  /** The table as printed. */
  text: string;
  layers: SummaryLayer[];
  totalParams: number;
  trainableParams: number;
  nonTrainableParams: number;
  /** Multiply-adds of the Linear and convolution layers (torchinfo's "mult-adds"). */
  multAdds: number;
  inputBytes: number;
  /** Outputs of the leaf layers, twice (their gradients too), as torchinfo estimates. */
  forwardBackwardBytes: number;
  paramBytes: number;
  totalBytes: number;
}

type Forward = (...xs: unknown[]) => unknown;
interface Row {
  module: Module;
  name: string;
  depth: number;
  input: Tensor[];
  output: Tensor[];
  leaf: boolean;
}

const WIDTHS = [40, 25, 25];
const RULE = '='.repeat(WIDTHS[0] + WIDTHS[1] + WIDTHS[2]);

/**
 * Runs `model` once on `input` (a tensor, several tensors, a shape, or several shapes to make
 * random inputs of) without autograd and in eval mode (restored after), and prints the layer table
 * as torchinfo's `summary(model, input_size=…)` does. Returns the text and the numbers.
 */
export function summary(model: Module, input: Tensor | Tensor[] | number[] | number[][], options: SummaryOptions = {}): ModelSummary {
  const op = 'summary';
  if (!(model instanceof Module)) throw argError(op, `model must be a Module, got ${describe(model)}`);
  const o = checkOptions(op, options, ['depth', 'dtype', 'device', 'print']);
  const maxDepth = checkInt(op, 'depth', o.depth ?? 3, 0);
  const print = checkBool(op, 'print', o.print ?? true);
  if (o.dtype !== undefined && !isDType(o.dtype)) throw argError(op, `dtype must be a dtype name such as 'f32', got ${describe(o.dtype)}`);
  const dtype = canonicalDType(o.dtype ?? 'f32') as CanonicalDType;
  const device = checkDevice(op, o.device) ?? model.parameters()[0]?.device ?? 'cpu';
  const names = new Map<Module, string>();
  for (const [n, m] of model.namedModules()) names.set(m, n);
  const rows: Row[] = [];
  let inputBytes = 0;
  const stack: Row[] = [];
  const patched: [Module, Forward | undefined][] = [];
  const modes: [Module, boolean][] = [...model.modules()].map((m) => [m, m.training]);
  for (const m of names.keys()) {
    const own = (m as unknown as { forward: Forward }).forward;
    patched.push([m, Object.hasOwn(m, 'forward') ? own : undefined]);
    (m as unknown as { forward: Forward }).forward = (...xs: unknown[]) => {
      const row: Row = { module: m, name: names.get(m) ?? '', depth: stack.length, input: tensorsIn(xs), output: [], leaf: true };
      if (stack.length) stack[stack.length - 1].leaf = false;
      rows.push(row);
      stack.push(row);
      try {
        const y = own.apply(m, xs);
        row.output = tensorsIn(y);
        return y;
      } finally {
        stack.pop();
      }
    };
  }
  let fbBytes = 0;
  let multAdds = 0;
  const shapes: (number[] | number[][])[] = [];
  try {
    model.eval();
    tidy(() =>
      noGrad(() => {
        const xs = inputsOf(op, input, dtype, device);
        inputBytes = xs.reduce((a, x) => a + bytesOf(x), 0);
        (model as unknown as { forward: Forward }).forward(...xs);
        for (const r of rows) {
          shapes.push(r.output.length === 1 ? [...r.output[0].shape] : r.output.map((t) => [...t.shape]));
          if (r.leaf) fbBytes += 2 * r.output.reduce((a, t) => a + bytesOf(t), 0);
          multAdds += macs(r.module, r.input[0], r.output[0]);
        }
      }),
    );
  } finally {
    for (const [m, own] of patched) {
      if (own === undefined) delete (m as { forward?: unknown }).forward;
      else (m as unknown as { forward: Forward }).forward = own;
    }
    for (const [m, mode] of modes) m.training = mode;
  }
  const counters = new Map<number, number>();
  const layers: SummaryLayer[] = rows.map((r, i) => {
    const k = (counters.get(r.depth) ?? 0) + 1;
    counters.set(r.depth, k);
    return {
      name: r.name,
      type: r.module.constructor.name,
      depth: r.depth,
      index: `${r.depth}-${k}`,
      outputShape: shapes[i],
      numParams: r.module.numParameters(),
      trainableParams: r.module.numParameters({ trainableOnly: true }),
    };
  });
  const totalParams = model.numParameters();
  const trainableParams = model.numParameters({ trainableOnly: true });
  const paramBytes = model.parameters().reduce((a, p) => a + bytesOf(p), 0);
  const result = {
    layers,
    totalParams,
    trainableParams,
    nonTrainableParams: totalParams - trainableParams,
    multAdds,
    inputBytes,
    forwardBackwardBytes: fbBytes,
    paramBytes,
    totalBytes: inputBytes + fbBytes + paramBytes,
  };
  const text = render(result, rows, maxDepth);
  if (print) console.log(text);
  return { text, ...result };
}

/** The model's inputs: the tensors given, or random ones (zeros for integer dtypes) of the shapes given. */
function inputsOf(op: string, input: unknown, dtype: CanonicalDType, device: string): Tensor[] {
  if (input instanceof Tensor) return [input];
  if (Array.isArray(input) && input.length && input.every((x) => x instanceof Tensor)) return input as Tensor[];
  const make = (shape: unknown) => {
    const s = checkSizes(op, 'input shape', shape, 0);
    return isFloating(dtype) ? rand(s, { dtype, device }) : zeros(s, { dtype, device });
  };
  if (Array.isArray(input) && input.length && input.every((x) => typeof x === 'number')) return [make(input)];
  if (Array.isArray(input) && input.length && input.every((x) => Array.isArray(x))) return input.map(make);
  throw argError(op, `input must be a Tensor, an array of Tensors, a shape or an array of shapes, got ${describe(input)}`);
}

/** The tensors of a module's output: itself, or those in an array or object of them. */
function tensorsIn(y: unknown): Tensor[] {
  if (y instanceof Tensor) return [y];
  const items = Array.isArray(y) ? y : y && typeof y === 'object' ? Object.values(y) : [];
  return items.filter((t): t is Tensor => t instanceof Tensor);
}

/** Multiply-adds of one call of a Linear or convolution layer from `x` to `y`. */
function macs(m: Module, x: Tensor | undefined, y: Tensor | undefined): number {
  const w = (m as { weight?: Tensor | null }).weight;
  if (!x || !y || !w) return 0;
  if (m instanceof Linear) return y.numel() * m.inFeatures;
  // A weight [out, in/groups, k…] (transposed: [in, out/groups, k…]) meets each output (input) element numel/shape[0] times.
  const perElement = w.numel() / w.shape[0];
  if (m instanceof Conv2d || m instanceof Conv1d) return y.numel() * perElement;
  if (m instanceof ConvTranspose2d || m instanceof ConvTranspose1d) return x.numel() * perElement;
  return 0;
}

const bytesOf = (t: Tensor) => t.numel() * itemSize(t.dtype);

/** A column as torchinfo writes it: left-aligned in its width, then one space (never cut). */
function cell(s: string, width: number): string {
  return `${s.padEnd(width)} `;
}

const count = (n: number) => n.toLocaleString('en-US');
const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
const shapeText = (s: number[] | number[][]) => JSON.stringify(s).replace(/,/g, ', ');

/** torchinfo's table: rows to `maxDepth`, a row with displayed children showing only its own parameters. */
function render(r: Omit<ModelSummary, 'text'>, rows: Row[], maxDepth: number): string {
  const lines = [RULE, cell('Layer (type:depth-idx)', WIDTHS[0]) + cell('Output Shape', WIDTHS[1]) + cell('Param #', WIDTHS[2]), RULE];
  r.layers.forEach((l, i) => {
    if (l.depth > maxDepth) return;
    const shownChildren = rows.some((c, j) => j > i && c.depth === l.depth + 1 && l.depth + 1 <= maxDepth && isInside(rows, i, j));
    const own = rows[i].module.parameters(false).reduce((a, p) => a + p.numel(), 0);
    const params = shownChildren ? own : l.numParams;
    const prefix = l.depth === 0 ? '' : l.depth === 1 ? '├─' : `${'│    '.repeat(l.depth - 1)}└─`;
    const label = l.depth === 0 ? l.type : `${prefix}${l.type}: ${l.index}`;
    lines.push(cell(label, WIDTHS[0]) + cell(shapeText(l.outputShape), WIDTHS[1]) + cell(params ? count(params) : '--', WIDTHS[2]));
  });
  lines.push(
    RULE,
    `Total params: ${count(r.totalParams)}`,
    `Trainable params: ${count(r.trainableParams)}`,
    `Non-trainable params: ${count(r.nonTrainableParams)}`,
    `Total mult-adds (M): ${(r.multAdds / 1e6).toFixed(2)}`,
    RULE,
    `Input size (MB): ${mb(r.inputBytes)}`,
    `Forward/backward pass size (MB): ${mb(r.forwardBackwardBytes)}`,
    `Params size (MB): ${mb(r.paramBytes)}`,
    `Estimated Total Size (MB): ${mb(r.totalBytes)}`,
    RULE,
  );
  return lines.map((l) => l.trimEnd()).join('\n');
}

/** Whether row j was called inside row i (it follows i before any row at i's depth or above). */
function isInside(rows: Row[], i: number, j: number): boolean {
  for (let k = i + 1; k <= j; k++) if (rows[k].depth <= rows[i].depth) return false;
  return true;
}
