/** fl.utils.SummaryWriter: every record's framing and CRCs, and the values, read back independently. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../../lib/index';
import { EventMessage, crc32c } from '../../lib/utils/summary_writer';
import { expectError } from '../helpers/reference';

const dir = mkdtempSync(join(tmpdir(), 'flockml-tb-'));

// Bitwise CRC-32C, independent of the table in the writer.
function crcRef(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of data) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}
const mask = (c: number) => (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0;

interface Decoded {
  step: number;
  fileVersion?: string;
  summary?: { value: { tag: string; simpleValue?: number; histo?: Record<string, unknown>; tensor?: { stringVal: Uint8Array[] } }[] };
}

function readRecords(path: string): Decoded[] {
  const buf = readFileSync(path);
  const out: Decoded[] = [];
  let at = 0;
  while (at < buf.length) {
    const len = Number(buf.readBigUInt64LE(at));
    assert.is(buf.readUInt32LE(at + 8), mask(crcRef(buf.subarray(at, at + 8))), `length CRC of record ${out.length}`);
    const data = buf.subarray(at + 12, at + 12 + len);
    assert.is(buf.readUInt32LE(at + 12 + len), mask(crcRef(data)), `data CRC of record ${out.length}`);
    out.push(EventMessage.toObject(EventMessage.decode(data), { longs: Number, defaults: false }) as Decoded);
    at += 16 + len;
  }
  assert.is(at, buf.length, 'no trailing bytes');
  return out;
}

test('CRC-32C matches the standard check value', () => {
  assert.is(crc32c(Buffer.from('123456789')), 0xe3069283);
});

test('scalars, histograms (array and tensor) and text round-trip with valid framing', async () => {
  const w = new fl.utils.SummaryWriter(join(dir, 'run1'));
  assert.match(w.path, /events\.out\.tfevents\.\d+\./);
  for (let step = 0; step < 5; step++) w.addScalar('loss/train', 1 / (step + 1), step);
  w.addHistogram('weights', [1, 2, 2, 3, 3, 3], 7);
  const t = fl.tensor([0.5, -0.5, 1.5, 2.5]);
  w.addHistogram('tensor', t, 8);
  w.addScalar('tensorScalar', fl.tensor(3.25), 9);
  w.addText('notes', 'hello **world**', 10);
  await w.close();
  t.dispose();
  const recs = readRecords(w.path);
  assert.is(recs[0].fileVersion, 'brain.Event:2');
  assert.is(recs.length, 1 + 5 + 2 + 1 + 1);
  for (let s = 0; s < 5; s++) {
    assert.is(recs[1 + s].step ?? 0, s);
    assert.is(recs[1 + s].summary?.value[0].tag, 'loss/train');
    assert.ok(Math.abs((recs[1 + s].summary?.value[0].simpleValue ?? 0) - 1 / (s + 1)) < 1e-6);
  }
  const h = recs[6].summary?.value[0].histo as { min: number; max: number; num: number; sum: number; bucket: number[] };
  assert.equal([h.min, h.max, h.num, h.sum], [1, 3, 6, 14]);
  assert.is(
    h.bucket.reduce((a, b) => a + b, 0),
    6,
  );
  const ht = recs[7].summary?.value[0].histo as { min: number; max: number; num: number };
  assert.equal([recs[7].step, ht.min, ht.max, ht.num], [8, -0.5, 2.5, 4]);
  assert.is(recs[8].summary?.value[0].simpleValue, 3.25);
  assert.is(Buffer.from(recs[9].summary?.value[0].tensor?.stringVal[0] ?? []).toString(), 'hello **world**');
  expectError(() => w.addScalar('x', 1, 0), TypeError, 'ERR_ARG');
});

test('records still queued at process exit reach the file', () => {
  const logdir = join(dir, 'exit');
  const script = `const fl = require('./lib/index'); const w = new fl.utils.SummaryWriter(${JSON.stringify(logdir)}); for (let i = 0; i < 100; i++) w.addScalar('x', i, i); process.exit(0);`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const [file] = readdirSync(logdir);
  const recs = readRecords(join(logdir, file));
  assert.is(recs.length, 101);
  assert.is(recs[100].summary?.value[0].simpleValue, 99);
});

test('arguments are validated', () => {
  expectError(() => new fl.utils.SummaryWriter(''), TypeError, 'ERR_ARG');
  const w = new fl.utils.SummaryWriter(join(dir, 'args'));
  expectError(() => w.addScalar('', 1, 0), TypeError, 'ERR_ARG');
  expectError(() => w.addScalar('a', 1, -1), RangeError, 'ERR_RANGE');
  expectError(() => w.addText('a', 3 as never, 0), TypeError, 'ERR_ARG');
  expectError(() => w.addHistogram('a', 3 as never, 0), TypeError, 'ERR_ARG');
  return w.close();
});

test.run();
