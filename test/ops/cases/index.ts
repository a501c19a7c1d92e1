/** Every conformance case, from one file per family. */
import type { OpCase } from '../harness/types';
import { cases as attention } from './attention';
import { cases as binary } from './binary';
import { cases as blas } from './blas';
import { cases as copy } from './copy';
import { cases as creation } from './creation';
import { cases as indexMethod } from './index_method';
import { cases as indexing } from './indexing';
import { cases as inplace } from './inplace';
import { cases as like } from './like';
import { cases as linalg } from './linalg';
import { cases as nn1d } from './nn_1d';
import { cases as nnConv } from './nn_conv';
import { cases as nnDistance } from './nn_distance';
import { cases as nnLayers } from './nn_layers';
import { cases as nnLoss } from './nn_loss';
import { cases as nnPool } from './nn_pool';
import { cases as nnResize } from './nn_resize';
import { cases as norms } from './norms';
import { cases as optim } from './optim';
import { cases as predicates } from './predicates';
import { cases as rearrange } from './rearrange';
import { cases as reduce } from './reduce';
import { cases as rnn } from './rnn';
import { cases as sample } from './sample';
import { cases as scan } from './scan';
import { cases as scatter } from './scatter';
import { cases as select } from './select';
import { cases as shape } from './shape';
import { cases as softmax } from './softmax';
import { cases as sort } from './sort';
import { cases as triangular } from './triangular';
import { cases as unary } from './unary';
import { cases as where } from './where';

// One import and one spread per family file, sorted by file name.
export const cases: readonly OpCase[] = [
  ...attention,
  ...binary,
  ...blas,
  ...copy,
  ...creation,
  ...indexMethod,
  ...indexing,
  ...inplace,
  ...like,
  ...linalg,
  ...nn1d,
  ...nnConv,
  ...nnDistance,
  ...nnLayers,
  ...nnLoss,
  ...nnPool,
  ...nnResize,
  ...norms,
  ...optim,
  ...predicates,
  ...rearrange,
  ...reduce,
  ...rnn,
  ...sample,
  ...scan,
  ...scatter,
  ...select,
  ...shape,
  ...softmax,
  ...sort,
  ...triangular,
  ...unary,
  ...where,
];
