/** Registers every kernel family's gradient formulas (lib/ops/grads/table.ts); lib/index.ts imports it. */
// defines: tril, triu
import './triangular';
