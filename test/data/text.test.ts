import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';

const { CharTokenizer, TokenWindows, textWindows, fortunesCorpus } = fl.data;

test('CharTokenizer fits a sorted vocabulary and round-trips text, including non-ASCII', () => {
  const text = 'hello, wörld — 🙂!';
  const tok = CharTokenizer.fit(text);
  assert.is(tok.vocabSize, new Set([...text]).size);
  assert.equal(tok.chars.slice(0, 3), [' ', '!', ',']);
  const ids = tok.encode(text);
  assert.is(ids.length, [...text].length);
  assert.is(tok.decode(ids), text);
  assert.is(tok.decode(fl.tensor(Array.from(ids), { dtype: 'i64' })), text);
  throwsCode(() => tok.encode('xyz'), 'ERR_ARG');
  throwsCode(() => tok.decode([tok.vocabSize]), 'ERR_INDEX');
});

test('CharTokenizer saves and loads its vocabulary as JSON', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flockml-tok-'));
  const tok = CharTokenizer.fit('abcab\nz');
  const path = join(dir, 'tok.json');
  tok.save(path);
  const back = CharTokenizer.load(path);
  assert.equal(back.chars, tok.chars);
  assert.equal(Array.from(back.encode('zab')), Array.from(tok.encode('zab')));
  writeFileSync(join(dir, 'bad.json'), '{"type":"word"}');
  throwsCode(() => CharTokenizer.load(join(dir, 'bad.json')), 'ERR_DATA');
  throwsCode(() => CharTokenizer.load(join(dir, 'missing.json')), 'ERR_NOT_FOUND');
});

test('TokenWindows gives inputs and next-token targets of fixed length', () => {
  const ds = new TokenWindows([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 4, { stride: 2 });
  assert.is(ds.length, 3);
  const [x, y] = ds.get(1);
  assert.equal(Array.from(x.dataSync() as BigInt64Array, Number), [2, 3, 4, 5]);
  assert.equal(Array.from(y.dataSync() as BigInt64Array, Number), [3, 4, 5, 6]);
  const [bx, by] = ds.getBatch([2, 0]);
  assert.equal([...bx.shape], [2, 4]);
  assert.is(bx.dtype, 'i64');
  assert.equal(Array.from(by.dataSync() as BigInt64Array, Number), [5, 6, 7, 8, 1, 2, 3, 4]);
  throwsCode(() => ds.get(3), 'ERR_INDEX');
  throwsCode(() => new TokenWindows([1, 2, 3], 3), 'ERR_SHAPE');
});

test('textWindows reads a file and fits a tokenizer on it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flockml-text-'));
  writeFileSync(join(dir, 'a.txt'), 'to be or not to be');
  const { dataset, tokenizer } = textWindows(join(dir, 'a.txt'), 5);
  assert.is(dataset.length, 18 - 5);
  assert.is(tokenizer.decode(dataset.get(0)[0].dataSync() as BigInt64Array), 'to be');
  throwsCode(() => textWindows(join(dir, 'none.txt'), 5), 'ERR_NOT_FOUND');
});

test('fortunesCorpus reads the fortunes package, and its error names the package when absent', () => {
  try {
    fortunesCorpus('/nonexistent/fortunes');
    assert.unreachable('expected an error');
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_NOT_FOUND');
    assert.match((e as Error).message, /apt-get install fortunes/);
  }
  const text = fortunesCorpus();
  assert.ok(text.length > 100_000, `corpus of ${text.length} characters`);
  assert.not.match(text, /^%$/m);
  const tok = CharTokenizer.fit(text);
  assert.ok(tok.vocabSize > 60 && tok.vocabSize < 400, `vocabulary of ${tok.vocabSize}`);
});

test('junk arguments to the text datasets are coded errors naming the op', () => {
  for (const junk of [undefined, null, Symbol('p'), 3, '']) {
    throwsCode(() => CharTokenizer.load(junk as never), 'ERR_ARG');
    throwsCode(() => textWindows(junk as never, 4), 'ERR_ARG');
  }
  const tok = CharTokenizer.fit('abc');
  throwsCode(() => tok.decode(undefined as never), 'ERR_ARG');
  throwsCode(() => tok.decode(3 as never), 'ERR_ARG');
  throwsCode(() => tok.save(Symbol('p') as never), 'ERR_ARG');
  for (const junk of [undefined, null, 'abcdef', [1, 'a', 2], new Float32Array(8), {}])
    throwsCode(() => new TokenWindows(junk as never, 2), 'ERR_ARG');
  throwsCode(() => new TokenWindows([1, 2, 3, 4], 2, null as never), 'ERR_ARG');
  throwsCode(() => new TokenWindows([1, 2, 3, 4], 2, { strides: 2 } as never), 'ERR_ARG');
  assert.is(new TokenWindows(new Uint16Array([1, 2, 3, 4]), 2).length, 2);
});

test.run();
