/** Parameter: a leaf tensor that requires grad and that a Module registers as trainable state. */
import { native } from '../native';
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { checkBool, checkTensorArg } from '../validate';

export class Parameter extends Tensor {
  /**
   * Shares `data`'s storage; the parameter outlives any tidy scope it is created in. Only floating
   * data can require grad (ERR_DTYPE otherwise).
   */
  constructor(data: Tensor, requiresGrad = true) {
    checkTensorArg('Parameter', 'data', data);
    checkBool('Parameter', 'requiresGrad', requiresGrad);
    super(native.reshape(data.handle, [...data.shape]));
    keep(this);
    this.requiresGrad_(requiresGrad);
  }
}

/**
 * A parameter made from a fresh tensor nothing else holds: that tensor's handle is released at once
 * rather than left to the garbage collector (the parameter keeps the storage).
 */
export function ownParameter(data: Tensor): Parameter {
  const p = new Parameter(data);
  data.dispose();
  return p;
}
