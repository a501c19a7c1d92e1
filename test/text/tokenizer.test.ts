import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';

const { Tokenizer } = fl.text;
const dir = join(__dirname, '..', 'fixtures', 'text');
const gpt2Json = JSON.parse(readFileSync(join(dir, 'gpt2_tokenizer.json'), 'utf8'));
const llamaJson = JSON.parse(readFileSync(join(dir, 'llama_tokenizer.json'), 'utf8'));
const gpt2 = Tokenizer.fromJSON(gpt2Json, {
  config: { bos_token: '<|endoftext|>', eos_token: '<|endoftext|>', unk_token: '<|endoftext|>' },
});
const llama = Tokenizer.fromJSON(llamaJson);

// ---- A reference BPE, written from the GPT-2 paper's encoder.py and sentencepiece's BPE. ----

/** GPT-2's byte → printable character table. */
function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const table = new Array<string>(256);
  for (const b of bs) table[b] = String.fromCodePoint(b);
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) table[b] = String.fromCodePoint(256 + n++);
  return table;
}

/** Merges symbols of `word` by the lowest-ranked adjacent pair until no pair has a rank. */
function bpe(word: string[], ranks: Map<string, number>): string[] {
  let w = word;
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i + 1 < w.length; i++) {
      const r = ranks.get(`${w[i]} ${w[i + 1]}`);
      if (r !== undefined && r < bestRank) [best, bestRank] = [i, r];
    }
    if (best < 0) return w;
    const [a, b] = [w[best], w[best + 1]];
    const out: string[] = [];
    for (let i = 0; i < w.length; i++) {
      if (i + 1 < w.length && w[i] === a && w[i + 1] === b) {
        out.push(a + b);
        i++;
      } else out.push(w[i]);
    }
    w = out;
  }
}

function ranksOf(json: { model: { merges: string[] } }): Map<string, number> {
  return new Map(json.model.merges.map((m, i) => [m, i]));
}

const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

function referenceGpt2(text: string): number[] {
  const table = bytesToUnicode();
  const ranks = ranksOf(gpt2Json);
  const vocab = gpt2Json.model.vocab as Record<string, number>;
  const ids: number[] = [];
  for (const piece of text.match(GPT2_SPLIT) ?? []) {
    const chars = Array.from(Buffer.from(piece, 'utf8'), (b) => table[b]);
    for (const t of bpe(chars, ranks)) ids.push(vocab[t]);
  }
  return ids;
}

function referenceLlama(text: string, bos = true): number[] {
  const ranks = ranksOf(llamaJson);
  const vocab = llamaJson.model.vocab as Record<string, number>;
  const ids: number[] = bos ? [vocab['<s>']] : [];
  if (text === '') return ids;
  const normal = `▁${text.replaceAll(' ', '▁')}`;
  for (const t of bpe(Array.from(normal), ranks)) {
    if (t in vocab) ids.push(vocab[t]);
    else for (const b of Buffer.from(t, 'utf8')) ids.push(vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`]);
  }
  return ids;
}

/** Real English: the first fortunes of the Debian fortunes files (a fixed sample when absent). */
function fortunes(n: number): string[] {
  const path = '/usr/share/games/fortunes/fortunes';
  if (!existsSync(path)) return ['You will be hungry again in one hour.', "Don't panic; it's only a test.\n\t-- Anonymous"];
  return readFileSync(path, 'utf8').split('\n%\n').slice(0, n);
}

// ---------------------------------------------------------------------------------------------

test('GPT-2 byte-level BPE: encodings worked out by hand from the fixture merges', () => {
  // merges 0-2 are "t h", "Ġ th", "Ġth e"; "l l" is merge 7; no merge joins "Ġthe" and "n".
  assert.equal(gpt2.tokenize(' the then'), ['Ġthe', 'Ġthe', 'n']);
  assert.equal(gpt2.tokenize('Hello'), ['H', 'e', 'll', 'o']);
  // ids 0-255 are the bytes in order, so unmerged bytes are their own ids: 🦊 is F0 9F A6 8A.
  assert.equal(gpt2.encode('🦊'), [0xf0, 0x9f, 0xa6, 0x8a]);
  assert.equal(gpt2.encode('é'), [0xc3, 0xa9]);
  assert.equal(gpt2.encode(''), []);
});

test('GPT-2: the library equals the reference BPE on real English, and decode gives the text back', () => {
  const texts = [
    ...fortunes(300),
    'Emoji 🦊🎉 and accents: café, naïve, Ærøskøbing; CJK 日本語; tabs\tand\n\nnewlines  ',
    "it's we'll they've 2024!",
  ];
  for (const t of texts) {
    const ids = gpt2.encode(t);
    assert.equal(ids, referenceGpt2(t), JSON.stringify(t));
    assert.is(gpt2.decode(ids), t);
  }
});

test('Llama BPE (▁ metaspace, byte fallback, <s>): the library equals the reference, and decode gives the text back', () => {
  assert.equal(llama.tokenize('the', { addSpecialTokens: false }), ['▁the']);
  assert.equal(llama.encode('Hi', { addSpecialTokens: true })[0], 1, 'bos first');
  // 🦊 is not in the vocabulary: its four UTF-8 bytes come out as <0xF0> <0x9F> <0xA6> <0x8A> (ids 3 + byte).
  assert.equal(llama.encode(' 🦊', { addSpecialTokens: false }).slice(-4), [3 + 0xf0, 3 + 0x9f, 3 + 0xa6, 3 + 0x8a]);
  const texts = [...fortunes(300), 'Emoji 🦊🎉 and accents: café, naïve; CJK 日本語', '  two leading spaces'];
  for (const t of texts) {
    const ids = llama.encode(t);
    assert.equal(ids, referenceLlama(t), JSON.stringify(t));
    assert.is(llama.decode(ids, { skipSpecialTokens: true }), t);
    assert.equal(llama.encode(t, { addSpecialTokens: false }), referenceLlama(t, false));
  }
});

test('Llama with the newer Metaspace pre-tokenizer (prepend_scheme first) encodes as with the normalizer', () => {
  const meta = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
  const tok = Tokenizer.fromJSON({ ...llamaJson, normalizer: null, pre_tokenizer: meta });
  for (const t of fortunes(50)) {
    assert.equal(tok.encode(t), llama.encode(t), JSON.stringify(t));
    assert.is(tok.decode(tok.encode(t), { skipSpecialTokens: true }), t);
  }
});

test('special tokens: ids, vocabSize, matched in text, skipped on decode', () => {
  assert.equal([llama.bosTokenId, llama.eosTokenId, llama.unkTokenId, llama.padTokenId], [1, 2, 0, null]);
  assert.equal([llama.bosToken, llama.eosToken, llama.unkToken], ['<s>', '</s>', '<unk>']);
  assert.is(llama.vocabSize, Object.keys(llamaJson.model.vocab).length);
  assert.equal(llama.specialTokenIds, [0, 1, 2]);
  const eot = gpt2Json.added_tokens[0].id;
  assert.is(gpt2.vocabSize, eot + 1);
  assert.equal([gpt2.bosTokenId, gpt2.eosTokenId, gpt2.unkTokenId, gpt2.padTokenId], [eot, eot, eot, null]);
  // GPT-2 adds no special tokens of its own; its end token in the text is one id
  assert.equal(gpt2.encode('Hi<|endoftext|>'), [...gpt2.encode('Hi'), eot]);
  assert.is(gpt2.decode([...gpt2.encode('Hi'), eot]), 'Hi<|endoftext|>');
  assert.is(gpt2.decode([...gpt2.encode('Hi'), eot], { skipSpecialTokens: true }), 'Hi');
  const ids = llama.encode('Hi</s>');
  assert.is(ids.at(-1), 2);
  assert.is(llama.decode(ids, { skipSpecialTokens: true }), 'Hi');
  const the = 'Ġthe';
  assert.is(gpt2.tokenToId(the), gpt2Json.model.vocab[the]);
  assert.is(gpt2.idToToken(gpt2Json.model.vocab[the]), the);
  assert.is(gpt2.tokenToId('not a token'), null);
  // without a config, GPT-2's end token is still found by its name; a bos can be named
  const bare = Tokenizer.fromJSON(gpt2Json, { bosToken: '<|endoftext|>' });
  assert.equal([bare.bosTokenId, bare.eosTokenId, bare.unkTokenId], [eot, eot, null]);
});

test('batches: right padding for training, left padding for generation, attention masks, tensors', () => {
  const tok = Tokenizer.fromJSON(llamaJson, { padToken: '</s>' });
  const a = tok.encode('Hello world');
  const b = tok.encode('the');
  const right = tok.encodeBatch(['Hello world', 'the']);
  const n = a.length - b.length;
  assert.equal(right.inputIds, [a, [...b, ...new Array(n).fill(2)]]);
  assert.equal(right.attentionMask, [a.map(() => 1), [...b.map(() => 1), ...new Array(n).fill(0)]]);
  const left = tok.encodeBatch(['Hello world', 'the'], { paddingSide: 'left' });
  assert.equal(left.inputIds[1], [...new Array(n).fill(2), ...b]);
  assert.equal(left.attentionMask[1], [...new Array(n).fill(0), ...b.map(() => 1)]);
  const t = tok.encodeBatchTensor(['Hello world', 'the'], { paddingSide: 'left', padTo: 8 });
  assert.equal([...t.inputIds.shape], [2, 8]);
  assert.is(t.inputIds.dtype, 'i64');
  assert.equal(tok.decodeBatch(t.inputIds, { skipSpecialTokens: true }), ['Hello world', 'the']);
  const leftMask = (k: number) => [...new Array(8 - k).fill(0), ...new Array(k).fill(1)];
  assert.equal(Array.from(t.attentionMask.dataSync() as ArrayLike<number | bigint>, Number), [
    ...leftMask(a.length),
    ...leftMask(b.length),
  ]);
  assert.equal(tok.encodeBatch(['Hello world'], { maxLength: 2 }).inputIds, [a.slice(0, 2)]);
  const one = tok.encodeTensor('Hello world');
  assert.equal([...one.shape], [1, a.length]);
  assert.is(tok.decode(one.reshape([-1]), { skipSpecialTokens: true }), 'Hello world');
  throwsCode(() => llama.encodeBatch(['Hello world', 'the']), 'ERR_ARG'); // no pad token
  throwsCode(() => tok.encodeBatch(['Hello world'], { padTo: 1 }), 'ERR_ARG');
  throwsCode(() => tok.encodeBatch(['x'], { paddingSide: 'middle' as 'left' }), 'ERR_ARG');
});

test('fromFile reads tokenizer.json and tokenizer_config.json from a model directory', async () => {
  const d = mkdtempSync(join(tmpdir(), 'flock-tok-'));
  try {
    copyFileSync(join(dir, 'gpt2_tokenizer.json'), join(d, 'tokenizer.json'));
    writeFileSync(
      join(d, 'tokenizer_config.json'),
      JSON.stringify({ bos_token: '<|endoftext|>', eos_token: { content: '<|endoftext|>' }, pad_token: '<|endoftext|>' }),
    );
    const eot = gpt2Json.added_tokens[0].id;
    for (const tok of [await Tokenizer.fromFile(d), Tokenizer.fromFileSync(join(d, 'tokenizer.json'))]) {
      assert.equal([tok.bosTokenId, tok.eosTokenId, tok.padTokenId], [eot, eot, eot]);
      assert.equal(tok.encode('Hello world'), gpt2.encode('Hello world'));
    }
    let code = '';
    await Tokenizer.fromFile(join(d, 'missing.json')).catch((e) => {
      code = e.code;
    });
    assert.is(code, 'ERR_NOT_FOUND');
    writeFileSync(join(d, 'bad.json'), '{"model": 3}');
    throwsCode(() => Tokenizer.fromFileSync(join(d, 'bad.json')), 'ERR_FORMAT');
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('errors: unknown options, bad ids, bad special tokens', () => {
  throwsCode(() => gpt2.encode('x', { addSpecial: true } as never), 'ERR_ARG');
  throwsCode(() => gpt2.encode(3 as never), 'ERR_ARG');
  throwsCode(() => gpt2.decode([gpt2.vocabSize]), 'ERR_INDEX');
  throwsCode(() => gpt2.decode([1.5]), 'ERR_ARG');
  throwsCode(() => Tokenizer.fromJSON(gpt2Json, { padToken: '<nope>' }), 'ERR_ARG');
  throwsCode(() => Tokenizer.fromJSON({ version: '1.0' }), 'ERR_FORMAT');
});

test.run();
