/** The op manifest: every family file's declarations, in one list. */
import type { OpDecl } from './types';
import { blasOps } from './blas';
import { inPlaceOps } from './inplace';
import { likeOps } from './like';
import { normOps } from './norms';
import { predicateOps } from './predicates';
import { rearrangeOps } from './rearrange';
import { triangularOps } from './triangular';

export * from './types';

// One import and one spread per family file, sorted by file name.
export const manifest: readonly OpDecl[] = [
  ...blasOps,
  ...inPlaceOps,
  ...likeOps,
  ...normOps,
  ...predicateOps,
  ...rearrangeOps,
  ...triangularOps,
];
