import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { TransactionSynchronizer } from '../transaction/transaction-synchronizer.interface';

/** How to reach Redis: a URL, ioredis options, cluster nodes, or a client you already own. */
export type RedisConnectionOptions =
  | string
  | RedisOptions
  | { cluster: ClusterNode[]; options?: ClusterOptions }
  | { client: Redis | Cluster };

/** Defaults for every lock taken through `LockService` and `@WithLock`. */
export interface LockDefaults {
  /** Lease in ms. Without an explicit lease the watchdog renews it every lease/3. Default 30000. */
  leaseTime?: number;
  /** How long `acquire` waits for a held lock before `LockAcquireTimeoutError`, in ms. Default 10000. */
  waitTimeout?: number;
  /** Renew locks taken without an explicit `leaseTime`. Default true. */
  watchdog?: boolean;
  /** Hand the lock over in FIFO order by default. Default false. */
  fair?: boolean;
}

/** Exponential backoff between delivery attempts of a failed job. */
export interface BackoffOptions {
  /** First delay in ms. Default 1000. */
  delay?: number;
  /** Multiplier per attempt. Default 2. */
  factor?: number;
  /** Upper bound of one delay in ms. Default 3600000. */
  maxDelay?: number;
  /** Random share (0..1) of each delay, so retries of many jobs do not align. Default 0.2. */
  jitter?: number;
}

/** What is kept after a job ends. */
export interface RetentionOptions {
  /** Dead letters kept per topic at most (oldest dropped first). Default 10000. */
  deadLetterMaxCount?: number;
  /** Dead letters older than this many ms are dropped. Default 7 days. */
  deadLetterMaxAge?: number;
}

/** Defaults for delayed-job consumers and producers. */
export interface DelayQueueDefaults {
  /** Handlers run at once per consumer. Default 1. */
  concurrency?: number;
  /** A claimed job returns to the queue if not acked or extended within this many ms. Default 30000. */
  visibilityTimeout?: number;
  /** Deliveries before a job goes to the dead-letter set. Default 5. */
  maxAttempts?: number;
  backoff?: BackoffOptions;
  /** How long shutdown waits for running handlers, in ms. Default 10000. */
  shutdownTimeout?: number;
  retention?: RetentionOptions;
}

/** Options of `RedisLockModule.forRoot()` / `forRootAsync()`. */
export interface RedisLockModuleOptions {
  /** Connection; default `redis://127.0.0.1:6379`. */
  redis?: RedisConnectionOptions;
  /** Prefix of every key this module writes. Default `'rl'`. */
  keyPrefix?: string;
  lock?: LockDefaults;
  delayQueue?: DelayQueueDefaults;
  /** Transaction port; default: the built-in AsyncLocalStorage unit of work (`runInTransaction`). */
  transactions?: TransactionSynchronizer;
  /**
   * How long bootstrap waits for Redis to answer before failing with `RedisConnectionError`, in ms.
   * Default 10000. Set 0 to not check at bootstrap.
   */
  connectTimeout?: number;
}
