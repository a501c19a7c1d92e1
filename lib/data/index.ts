/** fl.data: datasets and the DataLoader. */
export { type Dataset, TensorDataset } from './dataset';
export { DataLoader, defaultCollate, type DataLoaderOptions } from './dataloader';
