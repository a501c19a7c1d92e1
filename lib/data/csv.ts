/**
 * CSV files as datasets, parsed by csv-parse (quoting, embedded delimiters and newlines, BOM, CRLF):
 * CsvDataset streams a file of any size (an iterable dataset: one row in memory at a time, a new
 * pass per epoch); readCsv loads a whole file into a map-style TensorDataset (shuffling, fast
 * batches). Each row becomes a feature tensor of the chosen columns, and with a `label` column
 * `[features, label]`. A bad row is ERR_FORMAT naming the file, line and column.
 */
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream';
import { parse } from 'csv-parse';
import type { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { type CanonicalDType, type DType, isFloating, toDType } from '../dtype';
import { argError, checkOptions, describe, flockError } from '../errors';
import { type SampleDTypes, TensorDataset } from './dataset';

export interface CsvOptions {
  /**
   * The feature columns, by header name or 0-based index, in the order the feature tensor holds
   * them (default: every column but the label).
   */
  columns?: Array<string | number>;
  /** The label column (name or index): samples become `[features, label]`. */
  label?: string | number;
  /**
   * The features' dtype (default f32), or dtypes by column (name or index): the feature columns
   * must share one; the label's own (undeclared, a streaming loader's first batch decides it and
   * readCsv the whole column: all whole numbers give i64).
   */
  dtypes?: DType | Record<string, DType>;
  /**
   * true (default): the first line names the columns; false: no header, columns by index; an
   * array: no header line, these names.
   */
  header?: boolean | string[];
  /** The field delimiter (default ','). */
  delimiter?: string;
  /** Lines starting with this are skipped (default: none). */
  comment?: string;
  /** Strings of a column mapped to their index in the list (class names to labels), by column. */
  categories?: Record<string, string[]>;
}

const ACCEPTED = ['columns', 'label', 'dtypes', 'header', 'delimiter', 'comment', 'categories'] as const;

/** One resolved column: where it is in the row, its name for messages, and how its text becomes a number. */
interface Column {
  index: number;
  name: string;
  dtype: CanonicalDType | undefined;
  categories?: Map<string, number>;
}

interface Plan {
  features: Column[];
  label: Column | null;
  featureDType: CanonicalDType;
  width: number;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const SPECIAL: Record<string, number> = {
  nan: Number.NaN,
  inf: Number.POSITIVE_INFINITY,
  '+inf': Number.POSITIVE_INFINITY,
  '-inf': Number.NEGATIVE_INFINITY,
  infinity: Number.POSITIVE_INFINITY,
  '+infinity': Number.POSITIVE_INFINITY,
  '-infinity': Number.NEGATIVE_INFINITY,
};

/** The checked options, with the header to use when the file has none. */
class CsvSpec {
  readonly op: string;
  readonly path: string;
  readonly o: CsvOptions;

  constructor(op: string, path: string, options: CsvOptions) {
    this.op = op;
    if (typeof path !== 'string' || path.length === 0) throw argError(op, `path must be a file path, got ${describe(path)}`);
    this.path = path;
    const o = checkOptions(op, options, ACCEPTED);
    if (o.columns !== undefined && (!Array.isArray(o.columns) || o.columns.length === 0))
      throw argError(op, `columns must be a non-empty array of column names or indices, got ${describe(o.columns)}`);
    for (const c of [...(o.columns ?? []), ...(o.label === undefined ? [] : [o.label])])
      if (!(typeof c === 'string' || (Number.isInteger(c) && (c as number) >= 0)))
        throw argError(op, `a column is a header name or a 0-based index, got ${describe(c)}`);
    if (o.label !== undefined && o.columns?.includes(o.label))
      throw argError(op, `the label column ${describe(o.label)} is also a feature column`);
    if (
      o.header !== undefined &&
      typeof o.header !== 'boolean' &&
      !(Array.isArray(o.header) && o.header.every((h) => typeof h === 'string'))
    )
      throw argError(op, `header must be a boolean or an array of column names, got ${describe(o.header)}`);
    if (o.delimiter !== undefined && (typeof o.delimiter !== 'string' || o.delimiter.length === 0))
      throw argError(op, `delimiter must be a non-empty string, got ${describe(o.delimiter)}`);
    if (o.comment !== undefined && (typeof o.comment !== 'string' || o.comment.length === 0))
      throw argError(op, `comment must be a non-empty string, got ${describe(o.comment)}`);
    if (o.dtypes !== undefined && typeof o.dtypes !== 'string') {
      if (o.dtypes === null || typeof o.dtypes !== 'object' || Array.isArray(o.dtypes))
        throw argError(op, `dtypes must be a dtype or an object of dtypes by column, got ${describe(o.dtypes)}`);
      for (const d of Object.values(o.dtypes)) toDType(op, d);
    } else if (o.dtypes !== undefined) toDType(op, o.dtypes);
    if (o.categories !== undefined) {
      if (o.categories === null || typeof o.categories !== 'object' || Array.isArray(o.categories))
        throw argError(op, `categories must be an object of string lists by column, got ${describe(o.categories)}`);
      for (const [k, v] of Object.entries(o.categories))
        if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
          throw argError(op, `categories.${k} must be an array of strings, got ${describe(v)}`);
    }
    this.o = o;
  }

  /** The label's declared dtype (by name or index), if any. */
  private declared(name: string, index: number): CanonicalDType | undefined {
    const d = this.o.dtypes;
    if (d === undefined || typeof d === 'string') return undefined;
    const v = d[name] ?? d[String(index)];
    return v === undefined ? undefined : toDType(this.op, v);
  }

  /** Resolves the columns against the header (or, without one, the first row's width). */
  plan(header: string[] | null, width: number): Plan {
    const names = header ?? Array.from({ length: width }, (_, i) => String(i));
    const where = (c: string | number): number => {
      const i = typeof c === 'number' ? c : names.indexOf(c);
      if (i < 0 || i >= width)
        throw argError(
          this.op,
          `${this.path} has no column ${typeof c === 'string' ? JSON.stringify(c) : c}; its columns are ${header ? header.map((h) => JSON.stringify(h)).join(', ') : `0..${width - 1} (no header)`}`,
        );
      return i;
    };
    const column = (i: number): Column => {
      const name = names[i];
      const cats = this.o.categories?.[name] ?? this.o.categories?.[String(i)];
      return { index: i, name, dtype: this.declared(name, i), categories: cats ? new Map(cats.map((c, k) => [c, k])) : undefined };
    };
    const label = this.o.label === undefined ? null : column(where(this.o.label));
    const featureIdx = this.o.columns ? this.o.columns.map(where) : names.map((_, i) => i).filter((i) => i !== label?.index);
    if (featureIdx.length === 0) throw argError(this.op, `${this.path} has no feature columns besides the label`);
    const features = featureIdx.map(column);
    if (this.o.categories)
      for (const k of Object.keys(this.o.categories))
        if (!names.includes(k) && !(Number.isInteger(Number(k)) && Number(k) < width))
          throw argError(this.op, `categories names no column ${describe(k)} of ${this.path}`);
    const dts = new Set(features.map((f) => f.dtype).filter((d) => d !== undefined));
    if (dts.size > 1)
      throw argError(this.op, `the feature columns share one tensor, so one dtype; got ${[...dts].join(', ')} (declare the others alike)`);
    const featureDType = typeof this.o.dtypes === 'string' ? toDType(this.op, this.o.dtypes) : ([...dts][0] ?? 'f32');
    for (const f of features) f.dtype = featureDType;
    return { features, label, featureDType, width };
  }

  /** A field's text as a number of its column, or ERR_FORMAT naming the file, line and column. */
  value(text: string, col: Column, line: number): number {
    const t = text.trim();
    let v: number;
    if (col.categories) {
      const k = col.categories.get(t);
      if (k === undefined)
        throw this.bad(
          line,
          col,
          `${JSON.stringify(text)} is not one of its categories (${[...col.categories.keys()].map((c) => JSON.stringify(c)).join(', ')})`,
        );
      v = k;
    } else if (NUMBER.test(t)) v = Number(t);
    else if (Object.hasOwn(SPECIAL, t.toLowerCase())) v = SPECIAL[t.toLowerCase()];
    else throw this.bad(line, col, t === '' ? 'is empty' : `${JSON.stringify(text)} is not a number`);
    if (col.dtype !== undefined && !isFloating(col.dtype) && !Number.isInteger(v))
      throw this.bad(line, col, `${JSON.stringify(text)} is not an integer, as its dtype ${col.dtype} needs`);
    return v;
  }

  bad(line: number, col: Column | null, detail: string): Error {
    const at = col ? ` column ${JSON.stringify(col.name)} (field ${col.index + 1})` : '';
    return flockError('ERR_FORMAT', this.op, `${this.path}:${line}:${at} ${detail}`);
  }

  /** The file's rows as [fields, line], parsed as they stream in; the header (if any) is the first. */
  async *rows(): AsyncGenerator<[string[], number]> {
    const parser = parse({
      delimiter: this.o.delimiter ?? ',',
      comment: this.o.comment,
      bom: true,
      info: true,
      skip_empty_lines: true,
      relax_column_count: true, // checked here, to name the header's width
    });
    const source = createReadStream(this.path);
    pipeline(source, parser, () => undefined);
    try {
      for await (const r of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) yield [r.record, r.info.lines];
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { lines?: number };
      if (err.code === 'ENOENT') throw flockError('ERR_NOT_FOUND', this.op, `no such file: ${this.path}`);
      if (typeof err.code === 'string' && err.code.startsWith('CSV_')) throw this.bad(err.lines ?? 0, null, `${err.message} (${err.code})`);
      throw flockError('ERR_IO', this.op, `reading ${this.path}: ${err.message}`);
    } finally {
      parser.destroy();
      source.destroy();
    }
  }

  /** The rows as parsed samples: feature values and the label value, with the plan made from the header. */
  async *records(): AsyncGenerator<{ plan: Plan; features: number[]; label: number | null }> {
    let header: string[] | null = Array.isArray(this.o.header) ? this.o.header : null;
    const readsHeader = this.o.header === undefined || this.o.header === true;
    let plan: Plan | null = null;
    for await (const [fields, line] of this.rows()) {
      if (readsHeader && header === null) {
        header = fields.map((f) => f.trim());
        continue;
      }
      if (plan === null) plan = this.plan(header, header ? header.length : fields.length);
      if (fields.length !== plan.width)
        throw this.bad(line, null, `has ${fields.length} fields, but ${header ? 'the header has' : 'the first row had'} ${plan.width}`);
      const p = plan;
      yield {
        plan: p,
        features: p.features.map((c) => this.value(fields[c.index], c, line)),
        label: p.label ? this.value(fields[p.label.index], p.label, line) : null,
      };
    }
  }
}

/**
 * A CSV file read as a stream of samples (an iterable dataset, as torch.utils.data.IterableDataset):
 * each pass reads the file again, one row at a time, so files larger than memory train fine.
 * `for await (const [x, y] of new fl.data.DataLoader(new fl.data.CsvDataset('train.csv', { label: 'price', dtypes: { price: 'f32' } }), { batchSize: 64 }))`.
 */
export class CsvDataset implements AsyncIterable<Tensor | [Tensor, number]> {
  readonly #spec: CsvSpec;

  constructor(path: string, options: CsvOptions = {}) {
    this.#spec = new CsvSpec('CsvDataset', path, options);
  }

  get path(): string {
    return this.#spec.path;
  }

  /** `[undefined, labelDType]` when the label's dtype is declared: the default collate uses it for every batch. */
  get dtypes(): SampleDTypes {
    const o = this.#spec.o;
    if (o.label === undefined || o.dtypes === undefined || typeof o.dtypes === 'string') return undefined;
    const d = o.dtypes[String(o.label)];
    return d === undefined ? undefined : [undefined, d];
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Tensor | [Tensor, number]> {
    for await (const r of this.#spec.records()) {
      const x = tensor(r.features, { dtype: r.plan.featureDType });
      yield r.label === null ? x : [x, r.label];
    }
  }
}

/**
 * A whole CSV file as a map-style TensorDataset (features [rows, columns] and, with `label`, the
 * labels [rows]), for shuffling and fast batches; read as a stream, so only the numbers are held.
 * An undeclared label dtype comes from the whole column: all whole numbers give i64, else f32.
 */
export async function readCsv(path: string, options: CsvOptions = {}): Promise<TensorDataset> {
  const spec = new CsvSpec('readCsv', path, options);
  const features: number[] = [];
  const labels: number[] = [];
  let plan: Plan | null = null;
  for await (const r of spec.records()) {
    plan = r.plan;
    for (const v of r.features) features.push(v);
    if (r.label !== null) labels.push(r.label);
  }
  if (plan === null) throw flockError('ERR_FORMAT', 'readCsv', `${path} has no data rows`);
  const rows = features.length / plan.features.length;
  const x = tensor(Float64Array.from(features), { dtype: plan.featureDType, shape: [rows, plan.features.length] });
  if (!plan.label) return new TensorDataset(x);
  const dtype = plan.label.dtype ?? (labels.every(Number.isInteger) ? 'i64' : 'f32');
  return new TensorDataset(x, tensor(Float64Array.from(labels), { dtype, shape: [labels.length] }));
}
