/** Every conformance case, from one file per family. */
import type { OpCase } from '../harness/types';
import { cases as binary } from './binary';
import { cases as copy } from './copy';
import { cases as creation } from './creation';
import { cases as indexing } from './indexing';
import { cases as linalg } from './linalg';
import { cases as nnConv } from './nn_conv';
import { cases as nnLayers } from './nn_layers';
import { cases as nnLoss } from './nn_loss';
import { cases as nnPool } from './nn_pool';
import { cases as optim } from './optim';
import { cases as reduce } from './reduce';
import { cases as shape } from './shape';
import { cases as softmax } from './softmax';
import { cases as unary } from './unary';
import { cases as where } from './where';

// One import and one spread per family file, sorted by file name.
export const cases: readonly OpCase[] = [
  ...binary,
  ...copy,
  ...creation,
  ...indexing,
  ...linalg,
  ...nnConv,
  ...nnLayers,
  ...nnLoss,
  ...nnPool,
  ...optim,
  ...reduce,
  ...shape,
  ...softmax,
  ...unary,
  ...where,
];
