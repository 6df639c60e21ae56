import type { ConsumerPlan } from './job-contender.js';

/** What the bench process and its consumer processes (consumer-process.ts) say to each other. */

/** [group, sequence in group, start µs, end µs] of one handler run. */
/** admittedMs: when the contender's limiter admitted the start, on its own clock (epoch ms; -1 when it does not say). */
export type RunRecord = [g: number, s: number, startUs: number, endUs: number, admittedMs: number];

export interface ConsumerSpec {
  readonly bench: 'groups' | 'rate-limit';
  readonly contender: string;
  readonly url: string;
  readonly namespace: string;
  readonly plan: ConsumerPlan;
  /** What a handler does: waits this long (an I/O call), so that overlapping runs are visible. */
  readonly workMs: number;
}

export type ToConsumer = { type: 'go' } | { type: 'stop' };
export type FromConsumer =
  | { type: 'ready' }
  | { type: 'progress'; done: number }
  | { type: 'result'; records: RunRecord[]; cpuMicros: number; counters: Record<string, number> }
  | { type: 'error'; message: string };

/** CLOCK_MONOTONIC in µs: one clock for every process of the machine, so times from different processes compare. */
export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);
