/** Mixed precision: autocast regions and gradient scaling (`fl.amp`). */
export {
  autocast,
  AutocastScope,
  autocastState,
  isAutocastEnabled,
  autocastPolicy,
  type AutocastOptions,
  type AutocastState,
  type AutocastDevice,
  type AutocastDType,
} from '../dispatch/autocast';
export { GradScaler, type GradScalerOptions, type GradScalerStateDict } from './grad_scaler';
