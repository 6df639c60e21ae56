import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';

/**
 * When a repeatable job runs: every `every` ms (ticks at whole multiples of `every` since the epoch,
 * so every instance computes the same ticks), or at the times of a cron pattern (5 fields, or 6 with
 * seconds first) read in `timeZone` (an IANA name; default UTC).
 */
export type RepeatSchedule =
  | {
      /** The interval in ms: ticks at whole multiples of it since the epoch. */
      readonly every: number;
    }
  | {
      /** A cron pattern: 5 fields, or 6 with seconds first. */
      readonly cron: string;
      /** The IANA time zone the pattern is read in, e.g. `'Europe/Paris'`. Default UTC. */
      readonly timeZone?: string;
    };

/**
 * What happens to the ticks nobody enqueued while every instance was down (or the schedule's job was
 * cancelled): `'none'` skips them and resumes at the next future tick; `'latest'` (the default) runs
 * the most recent missed tick once, then resumes; `'all'` runs each missed tick, oldest first, at most
 * the last 1000.
 *
 * @inline
 */
export type RepeatCatchUp = 'none' | 'latest' | 'all';

/** Options of `DelayQueueService.repeat()` and of `@OnDelayed(topic, { repeat })`. */
export interface RepeatOptions<T = unknown> {
  /**
   * The schedule's id within its topic (default: the topic). Calling `repeat()` again with the same
   * id is an upsert: the same definition changes nothing, another one replaces it.
   */
  id?: string;
  /** The payload of every tick's job (JSON). Default null. */
  payload?: T;
  /** Missed ticks after downtime; see `RepeatCatchUp`. Default `'latest'`. */
  catchUp?: RepeatCatchUp;
  /** Deliveries of one tick's job before it goes to the dead letters. Default: the consumer's. */
  maxAttempts?: number;
  /** Backoff between deliveries of one tick's job after a failure. Default: the consumer's. */
  backoff?: BackoffOptions;
  /**
   * At most this many runs (ticks queued) in all, counted in Redis across every instance; then the
   * schedule is finished and kept (see `RepeatInfo.finished`). Calling `repeat()` again with another
   * limit keeps the count. A positive whole number. See docs/scheduling.md (Bounded repeats).
   */
  limit?: number;
  /** No tick before this time (a `Date` or epoch ms; ticks are compared on the Redis server clock). */
  startDate?: Date | number;
  /** No tick after this time, and none queued once the Redis server clock has passed it. After `startDate`. */
  endDate?: Date | number;
}

/** The `repeat` option of `@OnDelayed`: a schedule and its options. */
export type OnDelayedRepeat = RepeatSchedule & RepeatOptions;

/** A stored schedule, as returned by `DelayQueueService.repeats()` and `repeat()`. */
export interface RepeatInfo {
  /** The schedule's topic. */
  readonly topic: string;
  /** The schedule's id within its topic. */
  readonly id: string;
  /** When it runs. */
  readonly schedule: RepeatSchedule;
  /** What happens to missed ticks. */
  readonly catchUp: RepeatCatchUp;
  /** The tick whose job is queued now (Redis server clock); in the past while that job waits or runs. */
  readonly nextRunAt: Date;
  /** The last tick a consumer claimed to run (absent before the first); its run may still be going, or have failed. */
  readonly lastRunAt?: Date;
  /**
   * The schedule's runs so far: its ticks queued, less the queued one while it waits undelivered (a
   * tick whose job was cancelled counts). Counted in Redis: a loss of Redis's data starts it over.
   */
  readonly runs: number;
  /** The `limit` option, when given. */
  readonly limit?: number;
  /** The `startDate` option, when given. */
  readonly startDate?: Date;
  /** The `endDate` option, when given. */
  readonly endDate?: Date;
  /**
   * Set when no further tick will be queued: `limit` runs are used up, or no tick is left before
   * `endDate`. The schedule is kept (and counted by `stats().schedules`) until `removeRepeat()`;
   * `nextRunAt` is then its last tick.
   */
  readonly finished?: true;
  /**
   * Set by `repeat()` inside a transaction with the transactional outbox: the schedule waits in the
   * outbox until COMMIT, and `nextRunAt` is an estimate from the local clock (`listRepeats()` after
   * the commit reads what Redis stored). `runs` is then 0 (unknown until applied).
   */
  readonly pending?: true;
}
