/** Every conformance case, from one file per family. */
import type { OpCase } from '../harness/types';

// One import and one spread per family file, sorted by file name.
export const cases: readonly OpCase[] = [];
