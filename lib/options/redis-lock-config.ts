import type { Cluster, Redis } from 'ioredis';
import type { TransactionSynchronizer } from '../transaction/transaction-synchronizer.interface';
import type { BackoffOptions, RedisConnectionOptions, RetentionOptions } from './redis-lock-module-options.interface';

/** The module options after validation, with every default filled in. Internal. */
export interface RedisLockConfig {
  readonly redis: RedisConnectionOptions;
  readonly keyPrefix: string;
  readonly lock: {
    readonly leaseTime: number;
    readonly waitTimeout: number;
    readonly watchdog: boolean;
    readonly fair: boolean;
  };
  readonly delayQueue: {
    readonly concurrency: number;
    readonly visibilityTimeout: number;
    readonly maxAttempts: number;
    readonly backoff: Required<BackoffOptions>;
    readonly shutdownTimeout: number;
    readonly retention: Required<RetentionOptions>;
  };
  readonly transactions?: TransactionSynchronizer;
  readonly connectTimeout: number;
}

export type RedisClient = Redis | Cluster;
