/** The the profiler: stream intervals and ranges (cpp/bindings/profiler.cc). */
import { group, hand } from './dsl';

export const profilerExports = group('profiler', 'the profiler: stream intervals and ranges', [
  hand('profilerStart', null, '(): void', "Starts recording every task's interval on every stream, discarding earlier records."),
  hand('profilerStop', null, '(): void'),
  hand('profilerEnabled', null, '(): boolean'),
  hand('profilerDrain', null, '(): NativeProfilerRecords', 'Moves out the records so far; waits for CUDA timing events of recorded work.'),
  hand('profilerNow', null, '(): number', "The profiler's clock: µs since the Unix epoch."),
  hand(
    'profilerRangePush',
    'RangePush',
    '(name: string): void',
    'Opens a named range on the device timeline (NVTX where CUDA is compiled in).',
  ),
  hand('profilerRangePop', 'RangePop', '(): void'),
]);
