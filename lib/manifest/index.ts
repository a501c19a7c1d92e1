/** The op manifest: every family file's declarations, in one list. */
import { attention } from './attention';
import { binaryOps } from './binary';
import { blasOps } from './blas';
import { copyOps } from './copy';
import { creationOps } from './creation';
import { indexMethodOps } from './index_method';
import { indexingOps } from './indexing';
import { inPlaceOps } from './inplace';
import { likeOps } from './like';
import { linalgOps } from './linalg';
import { nnOps } from './nn';
import { nn1dOps } from './nn_1d';
import { nnDistanceOps } from './nn_distance';
import { nnResizeOps } from './nn_resize';
import { normOps } from './norms';
import { optimOps } from './optim';
import { predicateOps } from './predicates';
import { rearrangeOps } from './rearrange';
import { reduceOps } from './reduce';
import { rnnOps } from './rnn';
import { sampleOps } from './sample';
import { scanOps } from './scan';
import { scatterOps } from './scatter';
import { selectOps } from './select';
import { shapeOps } from './shape';
import { softmaxOps } from './softmax';
import { sortOps } from './sort';
import { triangularOps } from './triangular';
import type { KernelCode, OpDecl } from './types';
import { unaryOps } from './unary';
import { whereOps } from './where';

export * from './types';

// One import and one spread per family file, sorted by file name.
export const manifest: readonly OpDecl[] = [
  ...attention,
  ...binaryOps,
  ...blasOps,
  ...copyOps,
  ...creationOps,
  ...indexMethodOps,
  ...indexingOps,
  ...inPlaceOps,
  ...likeOps,
  ...linalgOps,
  ...nnOps,
  ...nn1dOps,
  ...nnDistanceOps,
  ...nnResizeOps,
  ...normOps,
  ...optimOps,
  ...predicateOps,
  ...rearrangeOps,
  ...reduceOps,
  ...rnnOps,
  ...sampleOps,
  ...scanOps,
  ...scatterOps,
  ...selectOps,
  ...shapeOps,
  ...softmaxOps,
  ...sortOps,
  ...triangularOps,
  ...unaryOps,
  ...whereOps,
];

/** Kernel op codes no user-visible op launches yet (the kernels implement them). */
export const kernelCodes: readonly KernelCode[] = [{ family: 'unary', code: 'logical_not' }];
