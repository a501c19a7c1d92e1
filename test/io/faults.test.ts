import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { tsNode } from '../dist/harness';
import { tempDir } from './helpers';

const { dir, cleanup } = tempDir('faults');
test.after(cleanup);

/** A safetensors file from a header object (or raw header text) and data bytes, as any writer could make it. */
function craft(name: string, header: object | string, data: Uint8Array | number = 0, headerLength?: bigint): string {
  let text = typeof header === 'string' ? header : JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const json = Buffer.from(text, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(headerLength ?? BigInt(json.length));
  const body = typeof data === 'number' ? new Uint8Array(data) : data;
  const path = join(dir, name);
  writeFileSync(path, Buffer.concat([len, json, body]));
  return path;
}

/** Both loadSync and the async load fail with ERR_FORMAT, naming the file and (when given) the tensor. */
async function rejectsFormat(path: string, mentions: RegExp[] = []): Promise<void> {
  throwsCode(() => fl.loadSync(path), 'ERR_FORMAT');
  const err = await fl.load(path).then(
    () => null,
    (e: Error & { code?: string }) => e,
  );
  assert.ok(err, `load(${path}) should reject`);
  assert.is(err!.code, 'ERR_FORMAT', err!.message);
  assert.instance(err, Error);
  assert.ok(err!.message.includes(path), `message names the file: ${err!.message}`);
  for (const re of mentions) assert.match(err!.message, re);
  throwsCode(() => fl.io.inspectSync(path), 'ERR_FORMAT');
}

const f32 = (shape: number[], begin: number) => ({
  dtype: 'F32',
  shape,
  data_offsets: [begin, begin + 4 * shape.reduce((a, b) => a * b, 1)],
});

test('a file truncated in every region: header length, header, data', async () => {
  const good = join(dir, 'good.safetensors');
  fl.saveSync({ 'a.weight': fl.ones([4, 4]), 'b.bias': fl.ones([8], { dtype: 'f64' }) }, good);
  const bytes = readFileSync(good);
  const n = Number(bytes.readBigUInt64LE(0));
  const cuts = [0, 3, 7, 8, 9, 8 + (n >> 1), 8 + n - 1, 8 + n, 8 + n + 1, 8 + n + 64, bytes.length - 1];
  for (const cut of cuts) {
    const path = join(dir, `cut-${cut}.safetensors`);
    writeFileSync(path, bytes.subarray(0, cut));
    await rejectsFormat(path);
  }
  // Cut inside the data: the message names the tensor that no longer fits.
  writeFileSync(join(dir, 'cut-data.safetensors'), bytes.subarray(0, bytes.length - 1));
  await rejectsFormat(join(dir, 'cut-data.safetensors'), [/truncated/, /'a\.weight'/]);
});

test('a header length of 2^63, and one just over the 100 MB bound, fail before any allocation', async () => {
  await rejectsFormat(craft('huge.safetensors', {}, 0, 1n << 63n), [/exceeds the limit/]);
  await rejectsFormat(craft('huge2.safetensors', {}, 0, 100_000_001n), [/exceeds the limit/]);
  await rejectsFormat(craft('longer-than-file.safetensors', {}, 0, 4096n), [/truncated/]);
});

test('overlapping, gapped, trailing and mis-sized offsets', async () => {
  await rejectsFormat(craft('overlap.safetensors', { a: f32([4], 0), b: { dtype: 'F32', shape: [4], data_offsets: [8, 24] } }, 24), [
    /'b'/,
    /overlap/,
    /'a'/,
  ]);
  await rejectsFormat(craft('gap.safetensors', { a: f32([2], 0), b: f32([2], 12) }, 20), [/'b'/, /gap/]);
  await rejectsFormat(craft('tail.safetensors', { a: f32([2], 0) }, 12), [/follow the last tensor/]);
  await rejectsFormat(craft('size.safetensors', { a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, 8), [/'a'/, /needs 12/]);
  await rejectsFormat(craft('reversed.safetensors', { a: { dtype: 'F32', shape: [0], data_offsets: [8, 0] } }, 8), [/'a'/]);
  await rejectsFormat(craft('beyond.safetensors', { a: f32([4], 0) }, 8), [/'a'/, /truncated/]);
  await rejectsFormat(craft('hugeoffset.safetensors', { a: { dtype: 'F32', shape: [1], data_offsets: [2 ** 64 - 4, 2 ** 64] } }, 4), [
    /'a'/,
  ]);
  await rejectsFormat(craft('overflow.safetensors', { a: { dtype: 'F64', shape: [4294967296, 4294967296], data_offsets: [0, 0] } }), [
    /'a'/,
  ]);
});

test('unknown and unsupported dtypes, malformed entries and JSON', async () => {
  await rejectsFormat(craft('dtype.safetensors', { a: { dtype: 'F8_E4M3', shape: [2], data_offsets: [0, 2] } }, 2), [
    /'a'/,
    /unsupported dtype 'F8_E4M3'/,
  ]);
  await rejectsFormat(craft('dtype2.safetensors', { a: { dtype: 'f32', shape: [1], data_offsets: [0, 4] } }, 4), [/unsupported dtype/]);
  await rejectsFormat(craft('nodtype.safetensors', { a: { shape: [1], data_offsets: [0, 4] } }, 4), [/'a'/]);
  await rejectsFormat(craft('negshape.safetensors', { a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, 4), [/'a'/]);
  await rejectsFormat(craft('fracshape.safetensors', { a: { dtype: 'F32', shape: [1.5], data_offsets: [0, 4] } }, 4), [/'a'/]);
  await rejectsFormat(craft('dims.safetensors', { a: { dtype: 'F32', shape: new Array(17).fill(1), data_offsets: [0, 4] } }, 4), [/'a'/]);
  await rejectsFormat(craft('offsets3.safetensors', { a: { dtype: 'F32', shape: [1], data_offsets: [0, 4, 8] } }, 4), [/'a'/]);
  await rejectsFormat(craft('meta.safetensors', { __metadata__: { n: 1 } }), [/__metadata__/]);
  await rejectsFormat(
    craft(
      'dup.safetensors',
      '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
      4,
    ),
    [/duplicate/],
  );
  await rejectsFormat(craft('json.safetensors', '{"a":{"dtype":"F32",', 0), [/malformed header/]);
  await rejectsFormat(craft('array.safetensors', '[1,2]', 0), [/not a JSON object/]);
  await rejectsFormat(craft('deep.safetensors', `{"__metadata__":${'['.repeat(5000)}${']'.repeat(5000)}}`, 0), [/nested too deeply/]);
  await rejectsFormat(craft('binary.safetensors', '\u0000\u0001\u0002', 0));
});

test('a header that is not valid UTF-8 (a Latin-1 name, a lone continuation byte, an overlong form, a surrogate, one cut short) is ERR_FORMAT, not a mangled name', async () => {
  const data = new Uint8Array(new Float32Array([1]).buffer);
  const good = Buffer.from(JSON.stringify({ nameX: f32([1], 0) }), 'utf8');
  const at = good.indexOf('X');
  for (const [what, bytes] of [
    ['latin-1 e-acute', [0xe9]],
    ['lone continuation', [0x80]],
    ['overlong slash', [0xc0, 0xaf]],
    ['surrogate', [0xed, 0xa0, 0x80]],
    ['above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['cut short', [0xe2, 0x82]],
  ] as const) {
    const text = Buffer.concat([good.subarray(0, at), Buffer.from(bytes), good.subarray(at + 1)]);
    const padded = Buffer.concat([text, Buffer.from(' '.repeat((8 - (text.length % 8)) % 8))]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(padded.length));
    const path = join(dir, `utf8-${what.replace(/\W+/g, '-')}.safetensors`);
    writeFileSync(path, Buffer.concat([len, padded, data]));
    await rejectsFormat(path, [/not valid UTF-8/]);
  }
  // Valid multi-byte names of every length still load.
  const names = ['caf\u00e9', '\u20ac', '\u{1F600}'];
  const ok = craft('utf8-ok.safetensors', Object.fromEntries(names.map((n, i) => [n, f32([1], 4 * i)])), new Uint8Array(12));
  assert.equal(Object.keys(fl.loadSync(ok)).sort(), [...names].sort());
});

test('well-formed files written by other tools load: unordered offsets, extra fields, escapes, empty', async () => {
  const data = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const path = craft(
    'other.safetensors',
    {
      'b\u00e9': { dtype: 'F32', shape: [1], data_offsets: [8, 12], extra: 'ignored' },
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      __metadata__: { format: 'pt' },
    },
    data,
  );
  const back = fl.loadSync(path);
  assert.equal(back.a.toArray(), [1, 2]);
  assert.equal(back['b\u00e9'].toArray(), [3]);
  assert.equal(Object.keys(fl.loadSync(craft('empty.safetensors', {}))), []);
});

test('kill -9 during a save leaves the previous file and checkpoint intact and loadable', async () => {
  const child = spawn(tsNode[0], [...tsNode.slice(1), join(__dirname, 'workers', 'killed_save.ts'), dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const killed = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('saving-second')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`worker exited ${code}: ${out}`))));
  });
  await killed;
  assert.not.ok(out.includes('saved-second'), 'the worker was killed during the second saves');
  const latest = await fl.checkpoint.latest(join(dir, 'ckpt'));
  assert.ok(latest?.endsWith('step-000000001'), `latest is the first checkpoint, got ${latest}`);
  const model = new fl.nn.Linear(4, 3);
  const info = await fl.checkpoint.load(join(dir, 'ckpt'), { model });
  assert.is(info.step, 1);
  const plain = await fl.load(join(dir, 'plain.safetensors'));
  assert.is(plain.w.shape[0], 1024);
  assert.is(plain.w.sum().itemSync(), 1024);
  // The dead process's temporary folder is cleared by the next save.
  await fl.checkpoint.save(join(dir, 'ckpt'), { model, step: 3 });
  assert.equal(
    readdirSync(join(dir, 'ckpt')).filter((n) => n.includes('.tmp-')),
    [],
  );
});

test.run();
