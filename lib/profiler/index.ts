/** fl.profiler: traces of training steps (Chrome/Perfetto JSON), per-op totals and user ranges. */
export { Profiler, start, profile, active, type ProfileOptions, type ProfileSchedule, type Activity } from './profile';
export { range, type ProfilerRange } from './range';
export { KeyAverages, keyAverages, type KeyAverageRow } from './key_averages';
export { mergeTraces, readTrace, type ChromeTrace, type TraceEvent } from './trace';
