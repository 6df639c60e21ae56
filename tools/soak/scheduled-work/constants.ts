/** Settings shared by the scheduled-work checker's driver (driver.ts), its workers (worker.ts) and its checker (checker.ts). */

/** Topic of the outbox jobs the producers schedule inside transactions. */
export const JOB_TOPIC = 'sw.jobs';

/** Topic of the repeatable schedules. */
export const TICK_TOPIC = 'sw.ticks';

/**
 * Schedules every worker upserts at start (the normal case: every instance registers them): they
 * must survive every fault, and come back after Redis lost its data.
 */
export const FIXED_SCHEDULES: ReadonlyArray<{ readonly id: string; readonly every: number }> = [
  { id: 's0', every: 300 },
  { id: 's1', every: 400 },
  { id: 's2', every: 500 },
];

/** Period of the schedules a worker creates and removes while their ticks run. */
export const CHURN_EVERY_MS = 250;

/** Visibility timeout of the consumers: a handler that outlives it may be run again (a later attempt). */
export const VISIBILITY_MS = 2_000;

/** `@OnOneInstance` lease and `@LeaderElection` ttl: pauses and stalls are drawn longer than this. */
export const LEASE_MS = 1_000;

/** The outbox relay's claim lease (the minimum): rows of a process killed after COMMIT are relayed this long after. */
export const CLAIM_LEASE_MS = 1_000;

/** `@OnOneInstance` key and how often each worker's timer calls the method. */
export const ONE_INSTANCE_KEY = 'sw.one';
export const ONE_INSTANCE_PERIOD_MS = 200;

/** `@LeaderElection` key, and how often the leader's loop observes `held` / `signal`. */
export const LEADER_KEY = 'sw.leader';
export const LEADER_LOOP_MS = 50;

/** The business table the producers insert into, beside the outbox table. */
export const ORDERS_TABLE = 'sw_orders';
export const OUTBOX_TABLE = 'sw_job_outbox';

/** The shared clock of every process on this machine: CLOCK_MONOTONIC in µs (a paused process does not stop it). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Small seeded PRNG (mulberry32): the same seed gives the same sequence. */
export { seededRandom } from '../soak-constants.js';
