/** fl.utils: watching a run — a progress bar and TensorBoard event files. */
export { progress, Progress, type ProgressOptions } from './progress';
export { SummaryWriter } from './summary_writer';
