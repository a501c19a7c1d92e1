/** lib/errors.ts: one rule for the error class, shared by native and TypeScript errors; options checks. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../lib/index';
import { checkOptions, didYouMean, errorKind, flockError } from '../lib/errors';
import { caught } from './helpers/errors';

test('the code decides the class, in TypeScript', () => {
  assert.instance(flockError('ERR_ARG', 'op', 'x'), fl.FlockTypeError);
  assert.instance(flockError('ERR_ARG', 'op', 'x'), TypeError);
  assert.instance(flockError('ERR_SHAPE', 'op', 'x'), RangeError);
  assert.instance(flockError('ERR_RANGE', 'op', 'x'), fl.FlockRangeError);
  const io = flockError('ERR_IO', 'op', 'x');
  assert.instance(io, fl.FlockError);
  assert.not.ok(io instanceof TypeError || io instanceof RangeError);
  assert.is(errorKind('ERR_TIMEOUT'), 'error');
});

test('native errors are made with the same classes and carry their code', () => {
  const dtype = caught(() => fl.zeros([2], { dtype: 'f32' }).add(fl.zeros([3])));
  assert.instance(dtype, fl.FlockRangeError);
  assert.is(dtype.code, 'ERR_SHAPE');
  const range = caught(() => fl.nn.functional.conv2d(fl.zeros([1, 1, 3, 3]), fl.zeros([1, 1, 1, 1]), null, { stride: 0 }));
  assert.instance(range, fl.FlockRangeError);
  assert.is(range.code, 'ERR_RANGE');
});

test('the op is named once even when the detail repeats it', () => {
  assert.is(flockError('ERR_ARG', 'gather', 'gather: index out of range').message, 'gather: index out of range');
  assert.is(flockError('ERR_ARG', 'gather', 'index out of range').message, 'gather: index out of range');
});

test('checkOptions names the unknown key, a likely intended one and the accepted ones', () => {
  const e = caught(() => checkOptions('crossEntropy', { labelSmothing: 0.1 }, ['weight', 'ignoreIndex', 'reduction', 'labelSmoothing']));
  assert.instance(e, TypeError);
  assert.is(e.code, 'ERR_ARG');
  assert.match(
    e.message,
    /^crossEntropy: unknown option 'labelSmothing' \(did you mean 'labelSmoothing'\?\); accepted: weight, ignoreIndex/,
  );
  assert.equal(checkOptions('op', undefined, ['a']), {});
  assert.is(caught(() => checkOptions('op', null, ['a'])).code, 'ERR_ARG');
  assert.is(caught(() => checkOptions('op', [1] as unknown as object, ['a'])).code, 'ERR_ARG');
  assert.is(didYouMean('zzzzzz', ['momentum', 'lr']), undefined);
});

test('the accepted names must be an array of strings (ERR_ARG naming the helper)', () => {
  const e = caught(() => checkOptions('op', {}, 'lr' as never));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /^checkOptions: accepted must be an array of names, got the string "lr"$/);
  assert.match(
    caught(() => didYouMean('lr', ['lr', Symbol('x')] as never)).message,
    /^didYouMean: accepted\[1\] must be a name \(a string\), got a Symbol$/,
  );
  assert.match(caught(() => didYouMean(undefined as never, ['lr'])).message, /^didYouMean: name must be a string, got undefined$/);
});

test('a Symbol op, detail or message is spelled out, not a TypeError from a template', () => {
  const s = Symbol('x') as never;
  assert.is(flockError('ERR_ARG', s, 'bad').message, 'Symbol(x): bad');
  assert.is(flockError('ERR_ARG', 'op', s).message, 'op: Symbol(x)');
  assert.is(new fl.FlockError('ERR_IO', s).message, 'Symbol(x)');
  assert.is(new fl.FlockTypeError('ERR_ARG', undefined as never).message, '');
});

test.run();
