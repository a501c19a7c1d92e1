/** The index entries of test/fixtures/index_fixtures.json (make_index_fixtures.py) as flockml's. */
import * as fl from '../../lib/index';
import type { FixtureTensor } from '../fixtures/load';

export type FixtureEntry =
  | number
  | boolean
  | ':'
  | '...'
  | 'newaxis'
  | { slice: [number | null, number | null, number | null] }
  | { tensor: FixtureTensor; dtype: 'i64' | 'bool' };

export function entry(e: FixtureEntry): fl.IndexEntry {
  if (e === ':') return null;
  if (e === '...') return fl.ellipsis;
  if (e === 'newaxis') return fl.newaxis;
  if (typeof e === 'number' || typeof e === 'boolean') return e;
  if ('slice' in e) {
    const [a, b, c] = e.slice;
    return c === null ? [a, b] : [a, b, c];
  }
  const t = fl.tensor(BigInt64Array.from(e.tensor.data, BigInt), { shape: e.tensor.shape });
  return e.dtype === 'bool' ? t.bool() : t;
}
