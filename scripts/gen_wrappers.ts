/**
 * The TypeScript glue scripts/gen_ops.ts derives from the op manifest for ops of a uniform call
 * shape, written to lib/ops/generated/:
 *
 *   elementwise.ts   the user-facing functions (`fl.exp`, `fl.eq`, `fl.isnan`, ...), each one call to
 *                    a launcher of lib/ops/call_shapes.ts, with the argument checks and autocast the entry declares
 *   binary.ts        the same for binary arithmetic ops, whose gradients come from the formula table
 *                    lib/ops/grads/binary.ts (a file of its own: the formulas use lib/ops/elementwise.ts,
 *                    which imports elementwise.ts above, so one file would make an import cycle)
 *   methods.ts       their Tensor methods (`t.exp()`), typed by declaration merging and installed on
 *                    Tensor's prototype
 *
 * lib/index.ts re-exports the functions; lib/ops/methods/index.ts imports the methods. The uniform call
 * shapes (`callShape`): a unary-family op with a gradient and at most two number arguments (the
 * kernel's scalars a and b); a bool-valued unary op of one tensor; a comparison (binary family, bool
 * result, `input` and `other`); a binary arithmetic op of `input` and `other` with a gradient formula.
 * An entry marked `custom` keeps its hand-written function.
 */
import type { ArgDecl, OpDecl } from '../lib/manifest/types';
import { docBlock } from './doc_block';

export type CallShape = { kind: 'unary'; numbers: ArgDecl[] } | { kind: 'predicate' } | { kind: 'compare' } | { kind: 'binary' };

export const WRAPPER_OUTPUTS = {
  functions: 'lib/ops/generated/elementwise.ts',
  binary: 'lib/ops/generated/binary.ts',
  methods: 'lib/ops/generated/methods.ts',
} as const;

const INTS = new Set(['i32', 'i64', 'u8']);

/** How the generated wrapper calls the kernel, or null when the op's function is written by hand. */
export function callShape(o: OpDecl): CallShape | null {
  if (o.custom || o.code === undefined || o.codes !== undefined) return null;
  const [first, ...rest] = o.args;
  if (first?.name !== 'input' || first.type !== 'tensor') return null;
  if (o.family === 'unary' && o.shape === 'same') {
    if (o.output === 'bool') return rest.length === 0 && o.grad.kind === 'none' ? { kind: 'predicate' } : null;
    const uniform =
      o.output === undefined &&
      o.grad.kind === 'formula' &&
      rest.length <= 2 &&
      rest.every((a) => a.type === 'number' && typeof a.default === 'number' && Number.isFinite(a.default));
    return uniform ? { kind: 'unary', numbers: rest } : null;
  }
  if (o.family === 'binary' && o.shape === 'broadcast') {
    const [other, ...more] = rest;
    if (more.length > 0 || other?.name !== 'other' || other.type !== 'tensor|number') return null;
    if (o.output === 'bool' && o.grad.kind === 'none') return { kind: 'compare' };
    const both = o.grad.kind === 'formula' && o.grad.inputs.length === 2;
    if (o.output === undefined && both) return { kind: 'binary' };
  }
  return null;
}

/** The ops whose function is generated, in manifest order, with their call shapes. */
export function generatedOps(ops: readonly OpDecl[]): { o: OpDecl; shape: CallShape }[] {
  return ops.flatMap((o) => {
    const shape = callShape(o);
    return shape ? [{ o, shape }] : [];
  });
}

function functionOf(o: OpDecl, shape: CallShape): string[] {
  const q = (s: string) => `'${s}'`;
  if (shape.kind === 'predicate')
    return [`export function ${o.name}(input: Tensor): Tensor {`, `  return predicateOp(${q(o.name)}, ${q(o.code!)}, input);`, '}'];
  const autocast = o.autocast !== 'none';
  if (shape.kind === 'binary') {
    const floats = !(o.dtypes.cpu ?? o.dtypes.cuda ?? []).some((d) => INTS.has(d));
    return [
      `export function ${o.name}(input: Tensor, other: TensorLike): Tensor {`,
      ...(autocast ? [`  [input, other] = autocastArgs(${q(o.name)}, input, other);`] : []),
      `  return binaryOp(${q(o.name)}, ${q(o.code!)}, input, other, binaryFormulas.${o.name}, ${floats});`,
      '}',
    ];
  }
  if (shape.kind === 'compare')
    return [
      `export function ${o.name}(input: Tensor, other: TensorLike): Tensor {`,
      `  return compareOp(${q(o.name)}, ${q(o.code!)}, input, other);`,
      '}',
    ];
  const params = ['input: Tensor', ...shape.numbers.map((a) => `${a.name} = ${String(a.default)}`)];
  const body: string[] = [];
  if (autocast) body.push(`  [input] = autocastArgs(${q(o.name)}, input);`);
  for (const a of shape.numbers) body.push(`  checkNumber(${q(o.name)}, ${q(a.name)}, ${a.name}, { infinite: true });`);
  const keepInts = (o.dtypes.cpu ?? o.dtypes.cuda ?? []).some((d) => INTS.has(d));
  const scalars = shape.numbers.map((a) => a.name);
  while (keepInts && scalars.length < 2) scalars.push('0');
  const call = ['input', ...scalars, ...(keepInts ? ['true'] : [])].join(', ');
  body.push(`  return unaryOp(${q(o.name)}, ${q(o.code!)}, ${call});`);
  return [`export function ${o.name}(${params.join(', ')}): Tensor {`, ...body, '}'];
}

function binaryFile(list: { o: OpDecl; shape: CallShape }[], banner: string): string {
  const out = [`/** ${banner} */`];
  if (list.length === 0) return `${[...out, 'export {};'].join('\n')}\n`;
  out.push("import type { Tensor, TensorLike } from '../../tensor';");
  if (list.some((g) => g.o.autocast !== 'none')) out.push("import { autocastArgs } from '../../dispatch/autocast';");
  out.push("import { binaryFormulas } from '../grads/binary';", "import { binaryOp } from '../call_shapes';");
  for (const { o, shape } of list) out.push('', ...docBlock(o.doc, ''), ...functionOf(o, shape));
  return `${out.join('\n')}\n`;
}

function functionsFile(list: { o: OpDecl; shape: CallShape }[], banner: string): string {
  const kinds = new Set(list.map((g) => g.shape.kind));
  const launchers = [
    ...(kinds.has('compare') ? ['compareOp'] : []),
    ...(kinds.has('predicate') ? ['predicateOp'] : []),
    ...(kinds.has('unary') ? ['unaryOp'] : []),
  ];
  const out = [`/** ${banner} */`];
  out.push(
    kinds.has('compare') ? "import type { Tensor, TensorLike } from '../../tensor';" : "import type { Tensor } from '../../tensor';",
  );
  if (list.some((g) => g.shape.kind === 'unary' && g.o.autocast !== 'none'))
    out.push("import { autocastArgs } from '../../dispatch/autocast';");
  if (list.some((g) => g.shape.kind === 'unary' && g.shape.numbers.length > 0)) out.push("import { checkNumber } from '../../validate';");
  out.push(`import { ${launchers.join(', ')} } from '../call_shapes';`);
  for (const { o, shape } of list) out.push('', ...docBlock(o.doc, ''), ...functionOf(o, shape));
  return `${out.join('\n')}\n`;
}

function methodsFile(list: { o: OpDecl; shape: CallShape }[], banner: string, kernel: { decls: string[]; bodies: string[] }): string {
  const methods = list.filter((g) => g.o.method);
  const two = (shape: CallShape) => shape.kind === 'compare' || shape.kind === 'binary';
  const params = (shape: CallShape) => (two(shape) ? ['other'] : shape.kind === 'unary' ? shape.numbers.map((a) => a.name) : []);
  const typed = (shape: CallShape) =>
    two(shape) ? ['other: TensorLike'] : shape.kind === 'unary' ? shape.numbers.map((a) => `${a.name}?: number`) : [];
  const module = (shape: CallShape) => (shape.kind === 'binary' ? 'binary' : 'ops');
  const out = [`/** ${banner} */`];
  // TensorLike in the declarations below resolves inside the augmented module: no import of it here.
  out.push("import { Tensor } from '../../tensor';");
  if (methods.some((g) => g.shape.kind === 'binary')) out.push("import * as binary from './binary';");
  out.push("import * as ops from './elementwise';");
  if (kernel.bodies.length) out.push("import * as kernel from './kernel_ops';");
  out.push('', "declare module '../../tensor' {", '  interface Tensor {');
  for (const { o, shape } of methods) out.push(...docBlock(o.doc, '    '), `    ${o.name}(${typed(shape).join(', ')}): Tensor;`);
  out.push(...kernel.decls);
  out.push('  }', '}', '', 'const methods: Partial<Tensor> & ThisType<Tensor> = {');
  for (const { o, shape } of methods) {
    const p = params(shape);
    out.push(`  ${o.name}(${p.join(', ')}) {`, `    return ${module(shape)}.${o.name}(${['this', ...p].join(', ')});`, '  },');
  }
  out.push(...kernel.bodies);
  out.push('};', '');
  out.push('// Defined as class methods are: non-enumerable, writable, configurable.');
  out.push('for (const [name, value] of Object.entries(methods))');
  out.push('  Object.defineProperty(Tensor.prototype, name, { value, writable: true, configurable: true, enumerable: false });');
  return `${out.join('\n')}\n`;
}

/** The generated TypeScript files' contents, by path relative to the repository root. */
export function wrapperFiles(
  ops: readonly OpDecl[],
  banner: string,
  kernelMethods: { decls: string[]; bodies: string[] },
): [string, string][] {
  const list = generatedOps(ops);
  return [
    [
      WRAPPER_OUTPUTS.functions,
      functionsFile(
        list.filter((g) => g.shape.kind !== 'binary'),
        banner,
      ),
    ],
    [
      WRAPPER_OUTPUTS.binary,
      binaryFile(
        list.filter((g) => g.shape.kind === 'binary'),
        banner,
      ),
    ],
    [WRAPPER_OUTPUTS.methods, methodsFile(list, banner, kernelMethods)],
  ];
}
