/**
 * The order of the messages between the ranks of a pipeline. Stage s sends each micro-batch's
 * activation to s + 1 after its forward and the gradient of its input to s − 1 after its backward.
 *
 * A process group moves one message at a time per rank, in the order the rank posted them, and a
 * send of more than the socket buffers hold waits for its receiver. Two neighbours that each post
 * a send to the other before the matching receive therefore deadlock once the tensors are large.
 * So every rank posts its sends and receives in one order that all ranks derive alike: the ticks
 * of the schedule (pipeline_schedule.ts), and within a tick the activations before the gradients,
 * each by the stage that makes it. The globally first message not yet done is then the next one
 * on both of its ranks, and it completes as soon as its sender has computed it.
 */
import { type Action, type Schedule, ticks } from './pipeline_schedule';

export interface Message {
  /** 'act': a stage's output to the next stage; 'grad': the gradient of a stage's input to the previous one. */
  kind: 'act' | 'grad';
  from: number;
  to: number;
  micro: number;
}

export interface PlannedTick {
  /** What each stage runs in this tick (at most one action per stage). */
  actions: Action[];
  /** The messages those actions make, in the order every rank posts them. */
  messages: Message[];
}

/** The schedule's ticks, each with the messages its actions send, in the one global order. */
export function messagePlan(schedule: Schedule, stages: number, micro: number): PlannedTick[] {
  return ticks(schedule, stages, micro).map((actions) => {
    const acts: Message[] = [];
    const grads: Message[] = [];
    for (const a of [...actions].sort((x, y) => x.stage - y.stage)) {
      if (a.kind === 'F' && a.stage < stages - 1) acts.push({ kind: 'act', from: a.stage, to: a.stage + 1, micro: a.micro });
      if (a.kind === 'B' && a.stage > 0) grads.push({ kind: 'grad', from: a.stage, to: a.stage - 1, micro: a.micro });
    }
    return { actions, messages: [...acts, ...grads] };
  });
}

/** The last backward `stage` runs in a step: the one after which its gradients are complete. */
export function lastBackward(plan: PlannedTick[], stage: number): number {
  let last = -1;
  for (const t of plan) for (const a of t.actions) if (a.stage === stage && a.kind === 'B') last = a.micro;
  return last;
}
