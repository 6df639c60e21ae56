import type { Cluster, Redis } from 'ioredis';
import type { JobOutboxStore } from '../outbox-port/job-outbox-store.js';
import type { TransactionSynchronizer } from '../transaction/transaction-synchronizer.interface.js';
import type {
  BackoffOptions,
  EvictionPolicyCheck,
  RedlockClientOptions,
  RedisConnectionOptions,
  RetentionOptions,
  SyncReplicasOptions,
} from './redis-lock-module-options.interface.js';

/** The module options after validation, with every default filled in. Internal. */
export interface RedisLockConfig {
  readonly redis: RedisConnectionOptions;
  readonly keyPrefix: string;
  readonly lock: {
    readonly leaseTime: number;
    readonly waitTimeout: number;
    readonly watchdog: boolean;
    readonly fair: boolean;
    readonly syncReplicas?: SyncReplicasOptions;
  };
  readonly delayQueue: {
    readonly concurrency: number;
    readonly visibilityTimeout: number;
    readonly maxAttempts: number;
    readonly backoff: Required<BackoffOptions>;
    readonly shutdownTimeout: number;
    readonly retention: Required<RetentionOptions>;
    /** Largest payload, as UTF-8 bytes of its JSON. */
    readonly maxPayloadBytes: number;
    /** Shard count per topic split into more than one shard. */
    readonly topics: ReadonlyMap<string, number>;
    /** The transactional outbox and its relay settings, when a store is configured. */
    readonly outbox?: OutboxConfig;
  };
  readonly transactions?: TransactionSynchronizer;
  readonly connectTimeout: number;
  /** Bound on waiting for an unreachable Redis (ms), or false: see the module option. */
  readonly unreachableTimeout: number | false;
  readonly evictionPolicyCheck: EvictionPolicyCheck;
  /** Set in Redlock mode only. */
  readonly redlock?: RedlockConfig;
  readonly tracing: boolean;
}

export type RedisClient = Redis | Cluster;

/** `delayQueue.outbox` and `delayQueue.outboxRelay` after validation. Internal. */
export interface OutboxConfig {
  readonly store: JobOutboxStore;
  readonly pollInterval: number;
  readonly batchSize: number;
  readonly minAge: number;
  readonly claimLease: number;
}

/** Redlock options after validation. Internal. */
export interface RedlockConfig {
  readonly clients: readonly RedlockClientOptions[];
  /** Masters that must agree: a majority, floor(n / 2) + 1. */
  readonly quorum: number;
  readonly driftFactor: number;
  readonly requestTimeout: number;
  readonly retryJitter: number;
  readonly retryDelay: number;
}

/** Injection token of the validated, defaulted module configuration (`RedisLockConfig`). Internal. */
export const REDIS_LOCK_CONFIG = Symbol.for('nestjs-redis-lock:config');
