/** Settings shared by the soak orchestrator (soak.ts) and its workers (soak-worker.ts). */
import type { LockKind } from './history.js';

/** The delayed-job topic every worker produces to and consumes from. */
export const SOAK_TOPIC = 'soak.jobs';

/** Keys of the exclusive re-entrant lock: plain, re-entrant, extend and multi-key holds share them. */
export const EXCLUSIVE_KEYS: readonly string[] = ['x0', 'x1', 'x2'];

/** Keys of the fair lock (a name is one kind of lock, so fair holds get their own). */
export const FAIR_KEYS: readonly string[] = ['f0', 'f1'];

/** The read/write lock's key. */
export const READ_WRITE_KEY = 'rw0';

/** The semaphore's key and permits: more holders than this at once is a violation. */
export const SEMAPHORE_KEY = 'sem';
export const SEMAPHORE_PERMITS = 2;

/** Lease of the locks (renewed by the watchdog): faults longer than this make holders lose their locks. */
export const LOCK_LEASE_MS = 1_500;

/** Fixed lease of a semaphore permit (no watchdog), so that its end is known to the occupancy check. */
export const SEMAPHORE_LEASE_MS = 2_000;

/** Visibility timeout of the soak's consumers: a killed or cut-off worker's jobs come back after it. */
export const JOB_VISIBILITY_MS = 3_000;

/** Concurrent operation loops per worker, each drawing a random lock operation at a time. */
export const OPERATION_LOOPS = 4;

/** How often each lock kind is drawn (relative weights). */
export const OPERATION_WEIGHTS: Readonly<Record<LockKind, number>> = {
  plain: 3,
  reentrant: 2,
  fair: 2,
  extend: 2,
  multi: 2,
  read: 3,
  write: 2,
  semaphore: 3,
};

/** Counters a worker reports (cumulative for its process) in its `STATS` lines, for progress lines. */
export interface WorkerStats {
  operations: number;
  acquired: number;
  acquireFailed: number;
  staleStoppedByFence: number;
  lockErrors: number;
  jobsScheduled: number;
  scheduleErrors: number;
  handlerRuns: number;
  handlerErrors: number;
}

/** Small seeded PRNG (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seeded generator and its whole numbers between `min` and `max` (included), for randomized specs. */
export function seededDraws(seed: number): { readonly random: () => number; readonly between: (min: number, max: number) => number } {
  const random = seededRandom(seed);
  return { random, between: (min, max) => Math.round(min + random() * (max - min)) };
}
