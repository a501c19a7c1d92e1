/** Fused attention: scaled dot-product attention (cpp/cpu/attention.cc, cuda/attention.cu). */
import { FLOATS, op } from './types';

export const attention = [
  op({
    name: 'nn.functional.scaledDotProductAttention',
    family: 'attention_forward',
    args: [
      { name: 'query', type: 'tensor', rule: '[..., tq, d], floating' },
      { name: 'key', type: 'tensor', rule: '[..., tk, d], same leading dims and dtype as query' },
      { name: 'value', type: 'tensor', rule: '[..., tk, dv], same leading dims and dtype as query' },
      {
        name: 'options',
        type: 'options',
        default: {},
        rule: 'attnMask bool or query dtype, broadcastable to [..., tq, tk], not with isCausal; 0 <= dropoutP <= 1; scale finite',
      },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: '[..., tq, dv]',
    grad: { kind: 'formula', inputs: ['query', 'key', 'value'] },
    autocast: 'lower',
  }),
];
