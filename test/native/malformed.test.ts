/**
 * Throws hundreds of malformed calls straight at the addon's exports (not through lib/): every
 * one must raise a TypeError or RangeError with a code, and the process must stay up.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../lib/native';
import * as fl from '../../lib/index';
import { raw } from '../helpers/reference';
import { binaryOpNames, unaryOpNames } from '../../types/op_codes';

const good = raw(native.full([2, 3], 'f32', 'cpu', 1));
const other = native.full([4], 'f32', 'cpu', 1);
const ints = native.full([2], 'i64', 'cpu', 0);
const disposed = native.full([2], 'f32', 'cpu', 1);
native.dispose(disposed);
const forged = 2 ** 49 - 1; // of a handle's form, naming no slot ever used (cpp/bindings/tensor_handle.h)
const plainObject = { shape: [2, 3] };

const junk: unknown[] = [
  undefined,
  null,
  0,
  -1,
  NaN,
  Infinity,
  1.5,
  2 ** 60,
  '',
  'f32',
  'cuda:99',
  true,
  {},
  [],
  [NaN],
  [-1],
  [1.5],
  ['2'],
  [2 ** 60, 2 ** 60],
  new Array(20).fill(1),
  () => 0,
  Symbol('s'),
  10n,
  plainObject,
  forged,
  disposed,
];

const fns = Object.entries(native).filter(([, v]) => typeof v === 'function') as [string, (...a: unknown[]) => unknown][];

let calls = 0;
const failures: string[] = [];

function expectJsError(name: string, args: unknown[]): void {
  calls++;
  try {
    const r = (native as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args);
    if (r instanceof Promise) r.catch(() => undefined);
  } catch (e) {
    if (!(e instanceof TypeError || e instanceof RangeError) || typeof (e as { code?: unknown }).code !== 'string')
      failures.push(`${name}(${args.map(String).join(', ')}): ${String(e)}`);
  }
}

// Calls that are valid must not be counted as malformed: only functions whose first argument is
// required. Each function gets every junk value in every one of its first four positions, with
// well-formed values elsewhere.
const wellFormed: Record<string, unknown[]> = {
  empty: [[2], 'f32', 'cpu'],
  full: [[2], 'f32', 'cpu', 1],
  fromBuffer: [new Float32Array(2), [2], 'f32', 'cpu'],
  arange: [0, 4, 1, 'f32', 'cpu'],
  linspace: [0, 1, 5, 'f32', 'cpu'],
  random: ['uniform', [2], 'f32', 'cpu', 1, 0, 0, 1],
  meta: [good],
  isDisposed: [good],
  dispose: [native.full([1], 'f32', 'cpu', 0)],
  read: [good],
  readSync: [good],
  sync: ['cpu'],
  syncSync: ['cpu'],
  setNumThreads: [2],
  gpuDeviceName: [0],
  gpuMemoryInfo: [0],
  unary: ['exp', good],
  unaryBackward: ['exp', good, good],
  binary: ['add', good, good],
  where: [native.full([2, 3], 'bool', 'cpu', 1), good, good],
  cast: [good, 'f64'],
  clone: [good],
  copy_: [good, good],
  to: [good, 'cpu'],
  reduce: ['sum', good, [0], false],
  softmax: [good, 1, false],
  matmul: [good, native.full([3, 2], 'f32', 'cpu', 1), false, false],
  reshape: [good, [3, 2]],
  narrow: [good, 0, 0, 1],
  permute: [good, [1, 0]],
  expand: [good, [2, 2, 3]],
  cat: [[good, good], 0],
  indexSelect: [good, 0, ints],
  gather: [good, 1, native.full([2, 3], 'i64', 'cpu', 0)],
  scatterAdd: [good, 1, native.full([2, 3], 'i64', 'cpu', 0), good],
};

test('every export rejects junk in each of its first four arguments', () => {
  for (const [name] of fns) {
    const base = wellFormed[name];
    if (!base) continue;
    for (let pos = 0; pos < Math.min(4, base.length); pos++) {
      for (const j of junk) {
        const args = [...base];
        args[pos] = j;
        // A few junk values are legitimately valid in some positions (e.g. 0 as a dim); skip
        // exactly those: the call must then simply succeed.
        try {
          const r = (native as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args);
          if (r instanceof Promise) r.catch(() => undefined);
          calls++;
        } catch {
          expectJsError(name, args);
        }
      }
    }
  }
  assert.equal(failures, []);
  assert.ok(calls >= 200, `only ${calls} calls`);
});

test('specific malformed calls raise the documented codes', () => {
  const cases: [string, unknown[], string][] = [
    ['binary', ['add', good, other], 'ERR_SHAPE'],
    ['binary', ['nope', good, good], 'ERR_ARG'],
    ['binary', [-1, good, good], 'ERR_ARG'],
    ['binary', [1e9, good, good], 'ERR_ARG'],
    ['binary', [0.5, good, good], 'ERR_ARG'],
    ['unary', [NaN, good], 'ERR_ARG'],
    ['binary', ['add', good, ints], 'ERR_DTYPE'],
    ['binary', ['add', good, disposed], 'ERR_DISPOSED'],
    ['binary', ['add', good, plainObject], 'ERR_ARG'],
    ['binary', ['add', good, forged], 'ERR_DISPOSED'],
    ['binary', ['add', good, 7], 'ERR_ARG'],
    ['binary', ['add', good, good + 0.5], 'ERR_ARG'],
    ['full', [[2, NaN], 'f32', 'cpu', 0], 'ERR_SHAPE'],
    ['full', [[2 ** 40, 2 ** 40], 'f32', 'cpu', 0], 'ERR_OOM'],
    ['full', [[2 ** 50], 'f32', 'cpu', 0], 'ERR_SHAPE'],
    ['full', [[2 ** 30, 2 ** 17], 'f32', 'cpu', 0], 'ERR_OOM'],
    ['full', [[2], 'f33', 'cpu', 0], 'ERR_DTYPE'],
    ['full', [[2], 'f32', 'gpu', 0], 'ERR_DEVICE'],
    // cuda:0 exists on a GPU machine and on the CUDA simulator; cuda:64 never does.
    ['full', [[2], 'f32', fl.cuda.isAvailable() ? 'cuda:64' : 'cuda:0', 0], 'ERR_DEVICE'],
    ['reduce', ['sum', good, [5], false], 'ERR_INDEX'],
    ['reduce', ['sum', good, [0, 0], false], 'ERR_ARG'],
    ['reduce', ['mean', ints, [0], false], 'ERR_DTYPE'],
    ['softmax', [ints, 0, false], 'ERR_DTYPE'],
    ['matmul', [good, good, false, false], 'ERR_SHAPE'],
    ['reshape', [good, [7]], 'ERR_SHAPE'],
    ['narrow', [good, 1, 2, 5], 'ERR_INDEX'],
    ['permute', [good, [0]], 'ERR_SHAPE'],
    ['expand', [good, [3, 3]], 'ERR_SHAPE'],
    ['cat', [[], 0], 'ERR_ARG'],
    ['cat', [[good, other], 0], 'ERR_SHAPE'],
    ['indexSelect', [good, 0, good], 'ERR_DTYPE'],
    ['fromBuffer', [new Float32Array(3), [2, 2], 'f32', 'cpu'], 'ERR_SHAPE'],
    ['random', ['randint', [2], 'i64', 'cpu', 0, 0, 5, 1], 'ERR_RANGE'],
    ['random', ['normal', [2], 'i64', 'cpu', 0, 0, 0, 1], 'ERR_DTYPE'],
    ['unaryBackward', ['exp', good, other], 'ERR_SHAPE'],
    ['copy_', [good, other], 'ERR_SHAPE'],
    ['where', [good, good, good], 'ERR_DTYPE'],
    ['setNumThreads', [0], 'ERR_INDEX'],
  ];
  for (const [name, args, code] of cases) {
    calls++;
    try {
      (native as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args);
      assert.unreachable(`${name} accepted ${JSON.stringify(args.map(String))}`);
    } catch (e) {
      assert.ok(e instanceof TypeError || e instanceof RangeError, `${name}: ${String(e)}`);
      assert.is((e as unknown as { code: string }).code, code, `${name}: ${(e as Error).message}`);
    }
  }
});

test('an op code may be given as its index in the generated name list', () => {
  const byName = raw(native.binary('mul', good, good));
  const byIndex = raw(native.binary(binaryOpNames.indexOf('mul'), good, good));
  const negated = raw(native.unary(unaryOpNames.indexOf('neg'), byIndex));
  assert.equal(Array.from(new Float32Array(native.readSync(byIndex))), Array.from(new Float32Array(native.readSync(byName))));
  assert.equal(Array.from(new Float32Array(native.readSync(negated))), [-1, -1, -1, -1, -1, -1]);
  native.dispose([byName, byIndex, negated]);
});

test('the process is still healthy afterwards', () => {
  const r = native.binary('add', good, good);
  assert.equal(Array.from(new Float32Array(native.readSync(raw(r)))), [2, 2, 2, 2, 2, 2]);
  assert.ok(calls >= 200);
});

test.run();
