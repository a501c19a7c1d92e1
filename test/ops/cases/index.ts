/** Every conformance case, from one file per family. */
import type { OpCase } from '../harness/types';
import { cases as attention } from './attention';

// One import and one spread per family file, sorted by file name.
export const cases: readonly OpCase[] = [...attention];
