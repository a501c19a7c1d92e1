/** Loads the native addon once; everything native goes through this typed handle. */
import type { NativeAddon } from '../types/native';
import { FlockError, FlockRangeError, FlockTypeError } from './errors';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const bindings = require('bindings') as (name: string) => unknown;

export const native = bindings('flockml') as NativeAddon;
native.setErrorClasses(FlockTypeError, FlockRangeError, FlockError);
export type { NativeTensor, NewTensor, NativeDType } from '../types/native';
