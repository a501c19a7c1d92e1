/** Optimizer steps and gradient clipping: fused multi-tensor `adam_step`, `sgd_step`, `grad_norm`, `clip_by_norm`. */
import { type ArgDecl, FLOATS, type OpDecl, op } from './types';

const PARAMS: ArgDecl = { name: 'params', type: 'tensors', rule: 'tensors with .grad (null grads are skipped)' };

function optim(name: string, family: string, args: ArgDecl[], shape: string): OpDecl {
  return op({
    name: `optim.${name}`,
    family,
    args: [PARAMS, ...args],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape,
    grad: { kind: 'none' },
    autocast: 'none',
  });
}

const OPTS = (rule: string): ArgDecl => ({ name: 'options', type: 'options', default: {}, rule });

export const optimOps: OpDecl[] = [
  optim(
    'SGD',
    'sgd_step',
    [OPTS('lr > 0, momentum >= 0, dampening, weightDecay >= 0, nesterov (needs momentum, no dampening), maximize')],
    'params in place',
  ),
  optim('Adam', 'adam_step', [OPTS('lr > 0, betas in [0, 1), eps > 0, weightDecay >= 0, amsgrad, maximize')], 'params in place'),
  optim(
    'AdamW',
    'adam_step',
    [OPTS('lr > 0, betas in [0, 1), eps > 0, weightDecay >= 0 (default 0.01), amsgrad, maximize')],
    'params in place',
  ),
  optim('gradNorm', 'grad_norm', [{ name: 'normType', type: 'number', default: 2, rule: '> 0 or Infinity' }], '[] (0-d)'),
  optim(
    'clipGradNorm_',
    'clip_by_norm',
    [
      { name: 'maxNorm', type: 'number', rule: '>= 0' },
      { name: 'normType', type: 'number', default: 2 },
    ],
    'the total norm, 0-d; grads in place',
  ),
  optim('clipGradValue_', 'composite', [{ name: 'clipValue', type: 'number', rule: '>= 0' }], 'grads in place'),
];
