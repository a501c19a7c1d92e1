/**
 * Recurrent cells (lib/nn/rnn_cell.ts; kernels cpp/cpu/rnn_cell.cc, cuda/rnn_cell.cu): one step
 * of an Elman, LSTM or GRU cell, as torch's rnn_tanh_cell, rnn_relu_cell, lstm_cell and gru_cell.
 * nn.RNN, nn.LSTM and nn.GRU run the same kernel once per step over a whole sequence.
 */
import { type ArgDecl, FLOATS, type OpDecl, op } from './types';

const ARGS = (state: ArgDecl): ArgDecl[] => [
  { name: 'input', type: 'tensor', rule: '[B, I] or unbatched [I], floating' },
  state,
  { name: 'weightIh', type: 'tensor', rule: '[gates·H, I], input dtype' },
  { name: 'weightHh', type: 'tensor', rule: '[gates·H, H], input dtype' },
  { name: 'biasIh', type: 'tensor?', default: null, rule: '[gates·H]' },
  { name: 'biasHh', type: 'tensor?', default: null, rule: '[gates·H]' },
];
const HX: ArgDecl = { name: 'hx', type: 'tensor?', rule: '[B, H] ([H] unbatched) or null for zeros' };
const GRADS = ['input', 'hx', 'weightIh', 'weightHh', 'biasIh', 'biasHh'];

function cell(name: string, state: ArgDecl, shape: string): OpDecl {
  return op({
    name: `nn.functional.${name}`,
    family: 'rnn_cell_forward',
    args: ARGS(state),
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape,
    grad: { kind: 'formula', inputs: GRADS },
    autocast: 'none',
  });
}

export const rnnOps: OpDecl[] = [
  cell('rnnTanhCell', HX, '[B, H]'),
  cell('rnnReluCell', HX, '[B, H]'),
  cell('lstmCell', { name: 'hx', type: 'tensors', rule: '[h, c], each [B, H], or null for zeros' }, '[h [B, H], c [B, H]]'),
  cell('gruCell', HX, '[B, H]'),
];
