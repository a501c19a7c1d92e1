/** The op manifest: every family file's declarations, in one list. */
import type { OpDecl } from './types';
import { attention } from './attention';

export * from './types';

// One import and one spread per family file, sorted by file name.
export const manifest: readonly OpDecl[] = [...attention];
