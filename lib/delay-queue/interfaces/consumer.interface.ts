import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';

/**
 * Per-consumer settings (of `consume()` and `@OnDelayed`). Each but `maxIdleWait` and `keepCompleted`
 * defaults to the module's `delayQueue` option of the same name; those two are set per consumer only. An unknown
 * key is refused with `InvalidOptionsError`.
 */
export interface ConsumerOptions {
  /** Handlers of this topic run at once in this process. */
  concurrency?: number;
  /** A claimed job returns to the queue if not acknowledged within this many ms; extended every third of it while the handler runs. */
  visibilityTimeout?: number;
  /** Deliveries before a job goes to the dead-letter set (a job's own `maxAttempts` wins). */
  maxAttempts?: number;
  /** Backoff after a failure (a job's own `backoff` wins). */
  backoff?: BackoffOptions;
  /** How long shutdown waits for running handlers before aborting their `signal` and handing the jobs back, in ms. */
  shutdownTimeout?: number;
  /**
   * Longest time, in ms, the consumer blocks on Redis without news before it looks at the topic again.
   * It bounds how late a job can be after a failure nobody reported (a crashed consumer's jobs, a
   * connection that hangs without closing), and sets the idle cost: about two commands per consumer
   * per period. Due times themselves are met by a timer, never by this period. Default 10000 (there
   * is no module-wide `delayQueue.maxIdleWait`).
   */
  maxIdleWait?: number;
  /**
   * At most `max` handler starts per `duration` ms for the topic, summed over all instances (each
   * counted when its job is claimed, on the Redis server clock; `JobContext.claimedAt`); jobs over
   * the limit wait, they are not failed. A sharded topic splits `max` evenly over its shards.
   * See docs/delayed-jobs.md#rate-limit.
   */
  rateLimit?: {
    /** Most handler starts in any window of `duration` ms (a whole number from 1). */
    max: number;
    /** The window, in ms. */
    duration: number;
  };
  /**
   * Jobs of one group (`schedule(…, { group })`) that may run at once, across all instances. Default 1.
   * Kept in Redis for the topic: the consumer that started last sets it (without the option, to 1).
   */
  groupConcurrency?: number;
  /**
   * Keep completed jobs, with what their handler returned, instead of deleting them: `get()` then
   * answers `state: 'completed'` with `result` and `finishedAt`, and their id still de-duplicates a
   * `schedule()`. `count`: most kept per topic shard; `age`: ms kept; give at least one (oldest go
   * first). Per consumer only (set the same on every instance). Default: completed jobs are deleted.
   */
  keepCompleted?: KeepCompletedOptions;
}

/** How many completed jobs a topic keeps (`ConsumerOptions.keepCompleted`): at least one bound. */
export interface KeepCompletedOptions {
  /** Most completed jobs kept per topic shard, the newest; a whole number from 1. */
  count?: number;
  /** How long a completed job is kept, in ms after it finished (Redis clock). */
  age?: number;
}

/** A running consumer of one topic, as returned by `DelayQueueService.consume()`. */
export interface Consumer {
  /** The topic it consumes. */
  readonly topic: string;
  /** False once `close()` has begun. */
  readonly running: boolean;
  /** Handlers running right now. */
  readonly activeCount: number;
  /**
   * Stops claiming, waits for running handlers up to `timeout` (default: `shutdownTimeout`), then
   * aborts the rest and hands their jobs back. Idempotent; the application's shutdown calls it too.
   */
  close(options?: { timeout?: number }): Promise<void>;
}
