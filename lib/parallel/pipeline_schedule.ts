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

export type Schedule = 'gpipe' | '1f1b';

export interface Action {
  stage: number;
  kind: 'F' | 'B';
  micro: number;
}

/** The actions of `stage` in the order it runs them. */
export function stageOrder(schedule: Schedule, stages: number, micro: number, stage: number): Action[] {
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
    if (tick.length === 0) throw new Error(`pipeline schedule ${schedule} deadlocked (p=${stages}, m=${micro})`);
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
  return (stages - 1) / (micro + stages - 1);
}
