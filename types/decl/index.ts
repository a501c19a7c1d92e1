/** Every native declaration group, in the order of types/native.ts. */
import { tensorExports } from './tensor';
import { failureExports } from './failure';
import { streamStressExports } from './stream_stress';
import { opsExports } from './ops';
import { nnExports } from './nn';
import { rearrangeExports } from './rearrange';
import { selectOpsExports } from './select_ops';
import { attentionExports } from './attention';
import { rnnExports } from './rnn';
import { distributedExports } from './distributed';
import { devicesExports } from './devices';
import { ioExports } from './io';
import { profilerExports } from './profiler';
import { readyExports } from './ready';
import { kernelOpsExports } from './kernel_ops';
import type { NativeGroup } from './dsl';

export const nativeGroups: readonly NativeGroup[] = [
  tensorExports,
  failureExports,
  streamStressExports,
  opsExports,
  nnExports,
  rearrangeExports,
  selectOpsExports,
  attentionExports,
  rnnExports,
  distributedExports,
  devicesExports,
  ioExports,
  profilerExports,
  readyExports,
  kernelOpsExports,
];
