/** fl.data: datasets, the DataLoader and the DistributedSampler. */
export { type Dataset, type IterableDataset, type SampleDTypes, TensorDataset } from './dataset';
export { DataLoader, defaultCollate, type DataLoaderOptions, type DataLoaderState, type Collated } from './dataloader';
export { DistributedSampler, type DistributedSamplerOptions } from './distributed_sampler';
export { CharTokenizer, TokenWindows, textWindows, fortunesCorpus, FORTUNES_DEFAULT_DIR } from './text';
export { Subset, ConcatDataset, randomSplit, type RandomSplitOptions } from './split_concat';
export { CsvDataset, readCsv, type CsvOptions } from './csv';
