/** The op manifest: every family file's declarations, in one list. */
import { binaryOps } from './binary';
import { copyOps } from './copy';
import { creationOps } from './creation';
import { indexingOps } from './indexing';
import { linalgOps } from './linalg';
import { nnOps } from './nn';
import { optimOps } from './optim';
import { reduceOps } from './reduce';
import { shapeOps } from './shape';
import { softmaxOps } from './softmax';
import type { KernelCode, OpDecl } from './types';
import { unaryOps } from './unary';
import { whereOps } from './where';

export * from './types';

// One import and one spread per family file, sorted by file name.
export const manifest: readonly OpDecl[] = [
  ...binaryOps,
  ...copyOps,
  ...creationOps,
  ...indexingOps,
  ...linalgOps,
  ...nnOps,
  ...optimOps,
  ...reduceOps,
  ...shapeOps,
  ...softmaxOps,
  ...unaryOps,
  ...whereOps,
];

/** Kernel op codes no user-visible op launches yet (the kernels implement them). */
export const kernelCodes: readonly KernelCode[] = [
  { family: 'reduce', code: 'prod' },
  { family: 'unary', code: 'logical_not' },
];
