/** Every native declaration group, in the order of types/native.ts. */
import { tensor } from './tensor';
import { failure } from './failure';
import { streamStress } from './stream_stress';
import { ops } from './ops';
import { nn } from './nn';
import { rearrange } from './rearrange';
import { selectOps } from './select_ops';
import { attention } from './attention';
import { rnn } from './rnn';
import { distributed } from './distributed';
import { devices } from './devices';
import { io } from './io';
import { profiler } from './profiler';
import { ready } from './ready';
import type { NativeGroup } from './dsl';

export const nativeGroups: readonly NativeGroup[] = [
  tensor,
  failure,
  streamStress,
  ops,
  nn,
  rearrange,
  selectOps,
  attention,
  rnn,
  distributed,
  devices,
  io,
  profiler,
  ready,
];
