/** The recurrent layers: one layer and direction per call (cpp/bindings/rnn.cc). */
import { group, hand } from './dsl';

export const rnnExports = group(
  'rnn',
  'recurrent layers: one layer and direction per call',
  [
    hand(
      'rnnForward',
      null,
      '(mode: RnnMode, gx: NativeTensor, weightHh: NativeTensor, biasHh: NativeTensor | null, h0: NativeTensor, c0: NativeTensor | null, reverse: boolean, save: boolean): [NewTensor, NewTensor | null]',
      'Every step of one layer and direction: gx [T, B, G] (the input projection), weightHh [G, H], biasHh [G], h0 [B, H], c0 [B, H] (LSTM only). [states, saved]: states [T+1, B, H] (LSTM [2, T+1, B, H], c the second plane) with step t in slot t+1 (reversed: slot t) and h0 in slot 0 (reversed: T); saved [T, B, 4H] for LSTM and GRU when `save`, else null.',
    ),
    hand(
      'rnnBackward',
      null,
      '(mode: RnnMode, grad: NativeTensor, states: NativeTensor, saved: NativeTensor | null, weightHh: NativeTensor, reverse: boolean, wantWeight: boolean, wantBias: boolean, wantH0: boolean, wantC0: boolean): [NewTensor, NewTensor | null, NewTensor | null, NewTensor | null, NewTensor | null]',
      '[dgx, dweightHh, dbiasHh, dh0, dc0], each null unless asked for (dgx always).',
    ),
  ],
  ['../ops/rnn.h'],
);
