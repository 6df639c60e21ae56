/** Settings shared by the soak orchestrator (soak.ts) and its workers (soak-worker.ts). */

/** The delayed-job topic every worker produces to and consumes from. */
export const SOAK_TOPIC = 'soak.jobs';

/** Permits of the soak's one semaphore: more holders than this at once is a violation. */
export const SEMAPHORE_PERMITS = 2;

/** Lease of the mutexes (renewed by the watchdog): faults longer than this make holders lose their locks. */
export const LOCK_LEASE_MS = 1_500;

/** Fixed lease of a semaphore permit (no watchdog), so that its end is known to the occupancy check. */
export const SEMAPHORE_LEASE_MS = 2_000;

/** Visibility timeout of the soak's consumers: a killed or cut-off worker's jobs come back after it. */
export const JOB_VISIBILITY_MS = 3_000;

/** The locks of the read-modify-write counters, each with its own fenced row: a plain one and a fair one. */
export const MUTEX_KEYS: ReadonlyArray<{ name: string; fair: boolean }> = [
  { name: 'counter', fair: false },
  { name: 'fair-counter', fair: true },
];

/** Counters a worker reports (cumulative for its process) in its `STATS` lines. */
export interface WorkerStats {
  lockSections: number;
  fencedWritesAccepted: number;
  staleRejected: number;
  lockTimeouts: number;
  lockErrors: number;
  semaphoreSections: number;
  semaphoreSkipped: number;
  jobsScheduled: number;
  scheduleErrors: number;
  handlerRuns: number;
  handlerErrors: number;
}
