/** Loads the native addon once; everything native goes through this typed handle. */
import type { NativeAddon } from '../types/native';
import { FlockError, FlockRangeError, FlockTypeError } from './errors';
import { type AddonSource, loadAddon } from './native_loader';

const loaded = loadAddon();

export const native = loaded.addon as NativeAddon;
/** Which addon was loaded: the prebuilt platform package or a local build (`flockml info` shows it). */
export const addonSource: AddonSource = loaded.source;
native.setErrorClasses(FlockTypeError, FlockRangeError, FlockError);
export type { NativeTensor, NewTensor, NativeDType } from '../types/native';
