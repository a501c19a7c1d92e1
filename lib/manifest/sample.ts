/** Draws from the Philox generator: randperm (random keys, then `sort`) and multinomial. */
import { FLOATS, NUMERIC, type OpDecl, op } from './types';

export const sampleOps: OpDecl[] = [
  op({
    name: 'randperm',
    family: 'sort',
    args: [
      { name: 'n', type: 'int', rule: 'n >= 0; n - 1 fits the dtype' },
      { name: 'options', type: 'options', default: {}, rule: 'dtype (default i64, not bool), device' },
    ],
    dtypes: { cpu: NUMERIC, cuda: NUMERIC },
    shape: '[n]',
    grad: { kind: 'none' },
    autocast: 'none',
  }),
  op({
    name: 'multinomial',
    family: 'multinomial',
    args: [
      { name: 'input', type: 'tensor', rule: '[categories] or [rows, categories]; finite, non-negative, each row summing above 0' },
      { name: 'numSamples', type: 'int', rule: '> 0; without replacement at most the non-zero categories of every row' },
      { name: 'replacement', type: 'bool', default: false },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: '[rows, numSamples] (or [numSamples])',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
    output: 'i64',
  }),
];
