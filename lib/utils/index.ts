/** fl.utils: watching a run — a progress bar, TensorBoard event files, FLOP counts, MFU and a model summary. */
export { progress, Progress, type ProgressOptions } from './progress';
export { SummaryWriter } from './summary_writer';
export { forwardFlops, stepFlops, matmulFlops, conv2dFlops } from './flops';
export { mfu, peakFlops, gpuPeakFlops, cpuPeakFlops, GPU_PEAKS, type MfuOptions, type PeakDType } from './mfu';
export { checkpoint, checkpointSequential } from './checkpoint';
export { summary, type SummaryOptions, type SummaryLayer, type ModelSummary } from './summary';
