/**
 * Pipeline schedules: the order in which each stage runs the forward (F) and backward (B) of each
 * micro-batch, and one global order, in ticks, that respects both every stage's order and the data
 * dependencies (F of a micro-batch on stage s after F on s − 1; B on s after B on s + 1).
 *
 * GPipe runs all m forwards, then all m backwards: every stage holds m micro-batches' activations.
 * 1F1B (PipeDream-Flush) lets stage s run p − s − 1 warm-up forwards, then alternates one forward
 * and one backward: stage s holds at most p − s micro-batches' activations, whatever m is. Both
 * have the same bubble, (p − 1)/(m + p − 1) of each stage's time when F and B costs are uniform.
 */

import { flockError, outOfRange } from '../errors';
import { checkChoice, checkInt } from '../validate';

export type Schedule = 'gpipe' | '1f1b';

const SCHEDULES: readonly Schedule[] = ['gpipe', '1f1b'];
/**
 * A schedule is JS objects, two actions per micro-batch and stage, with a Set of their keys: a
 * bound far above real pipelines (hundreds of stages, thousands of micro-batches) and below V8's
 * Set limit (2^24 entries) and the heap.
 */
const MAX_STAGE_MICRO = 2 ** 21;

/** The stage and micro-batch counts of `op`: integers ≥ 1 whose product is a schedule JS can hold. */
function checkCounts(op: string, stages: unknown, micro: unknown): void {
  const p = checkInt(op, 'stages', stages, 1);
  const m = checkInt(op, 'micro', micro, 1);
  if (p * m > MAX_STAGE_MICRO) throw outOfRange(op, `stages·micro must be at most 2^21, got ${p}·${m}`);
}

export interface Action {
  stage: number;
  kind: 'F' | 'B';
  micro: number;
}

/** The actions of `stage` in the order it runs them. */
export function stageOrder(schedule: Schedule, stages: number, micro: number, stage: number): Action[] {
  const op = 'stageOrder';
  checkChoice(op, 'schedule', schedule, SCHEDULES);
  checkCounts(op, stages, micro);
  if (checkInt(op, 'stage', stage) >= stages) throw outOfRange(op, `stage must be an integer < stages (${stages}), got ${stage}`);
  const F = (k: number): Action => ({ stage, kind: 'F', micro: k });
  const B = (k: number): Action => ({ stage, kind: 'B', micro: k });
  const ks = Array.from({ length: micro }, (_, k) => k);
  if (schedule === 'gpipe') return [...ks.map(F), ...ks.map(B)];
  const warmup = Math.min(stages - stage - 1, micro);
  const out = ks.slice(0, warmup).map(F);
  let f = warmup;
  let b = 0;
  while (f < micro) {
    out.push(F(f++));
    out.push(B(b++));
  }
  while (b < micro) out.push(B(b++));
  return out;
}

/**
 * Every action, grouped in ticks: in each tick every stage whose next action's inputs were made in
 * an earlier tick runs it. Issued tick by tick, each device's queue gets its stage's order.
 */
export function ticks(schedule: Schedule, stages: number, micro: number): Action[][] {
  const op = 'pipelineTicks';
  checkChoice(op, 'schedule', schedule, SCHEDULES);
  checkCounts(op, stages, micro);
  const orders = Array.from({ length: stages }, (_, s) => stageOrder(schedule, stages, micro, s));
  const next = orders.map(() => 0);
  const done = new Set<string>();
  const key = (kind: string, s: number, k: number) => `${kind}${s}:${k}`;
  const out: Action[][] = [];
  const total = orders.reduce((n, o) => n + o.length, 0);
  let finished = 0;
  while (finished < total) {
    const tick: Action[] = [];
    for (let s = 0; s < stages; s++) {
      const a = orders[s][next[s]];
      if (!a) continue;
      const ready =
        a.kind === 'F'
          ? s === 0 || done.has(key('F', s - 1, a.micro))
          : s === stages - 1
            ? done.has(key('F', s, a.micro))
            : done.has(key('B', s + 1, a.micro));
      if (ready) tick.push(a);
    }
    if (tick.length === 0) throw flockError('ERR_INTERNAL', op, `the ${schedule} schedule deadlocked (p=${stages}, m=${micro})`);
    for (const a of tick) {
      done.add(key(a.kind, a.stage, a.micro));
      next[a.stage]++;
    }
    finished += tick.length;
    out.push(tick);
  }
  return out;
}

/** The bubble of a synchronous schedule with uniform stage costs: (p − 1)/(m + p − 1). */
export function theoreticalBubble(stages: number, micro: number): number {
  const op = 'theoreticalBubble';
  checkInt(op, 'stages', stages, 1);
  checkInt(op, 'micro', micro, 1);
  return (stages - 1) / (micro + stages - 1);
}
