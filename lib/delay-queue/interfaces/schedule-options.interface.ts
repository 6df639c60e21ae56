import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';
import type { DedupeOptions } from './dedupe-options.interface.js';

/** When and how a job runs. Give `delay` or `at`, not both; with neither the job is due at once. */
export interface ScheduleOptions {
  /** Milliseconds from now (Redis server clock; inside a transaction: from the commit). Default 0. */
  delay?: number;
  /** Absolute time to run at (epoch ms or a Date). A past time means "due now". */
  at?: Date | number;
  /**
   * Job id, for de-duplication, `cancel`, `reschedule` and `get`. Scheduling an id that is still
   * waiting, running or dead keeps the first job (unless `replace`). Default: a random UUID.
   */
  id?: string;
  /**
   * With an `id` that already exists: replace its payload, options and due time, and reset its attempts.
   * A run of the old version in progress loses its visibility (its `job.signal` aborts). Default false.
   */
  replace?: boolean;
  /** Deliveries before the job goes to the dead-letter set. Default: the consumer's, then the module's. */
  maxAttempts?: number;
  /** Backoff between deliveries after a failure, merged over the module defaults. */
  backoff?: BackoffOptions;
  /**
   * The job's group, e.g. `'order:42'`: the jobs of one group start one at a time across all
   * instances (or `groupConcurrency` at a time), in due order, while other groups run in parallel.
   * See docs/delayed-jobs.md#groups. At most 256 bytes; no quotes, backslashes or control characters.
   */
  group?: string;
  /**
   * Folds the calls with one key into one job, across instances: `'throttle'` (default) keeps the
   * first job and answers `'existing'` for `ttl` ms; `'debounce'` restarts the wait and replaces the
   * payload on each call, so the job runs `ttl` ms after the last one. Not with `id` or `replace`;
   * in debounce mode not with `delay` or `at`. See docs/delayed-jobs.md#throttle-and-debounce.
   */
  dedupe?: DedupeOptions;
  /**
   * Among jobs that are due, smaller runs first: an integer from 0 (the default, first) to 2_097_152.
   * A job not yet due never starts before its time, whatever its priority; jobs of one priority run
   * in due order, then in the order they were scheduled. Not with `group` (refused). See
   * docs/delayed-jobs.md#priorities.
   */
  priority?: number;
}

/**
 * One job of `scheduleMany`.
 */
export type ScheduledJob<T> = {
  /** The job's payload, stored as JSON. */
  payload: T;
} & ScheduleOptions;
