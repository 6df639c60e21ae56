import { keysOf } from './known-option-keys.js';
import type {
  BackoffOptions,
  DelayQueueDefaults,
  DelayQueueTopicOptions,
  LockDefaults,
  OutboxRelayOptions,
  RedisLockModuleOptions,
  RedlockOptions,
  RetentionOptions,
  SyncReplicasOptions,
} from './redis-lock-module-options.interface.js';

/**
 * The keys each level of `RedisLockModuleOptions` accepts, checked by the compiler against the
 * interfaces (see `keysOf`). `redis` (ioredis' own options), `transactions` and `delayQueue.outbox`
 * (objects the application builds) are not levels of ours and are not listed.
 */
export const MODULE_OPTION_KEYS = {
  root: keysOf<RedisLockModuleOptions>()([
    'redis',
    'redlock',
    'keyPrefix',
    'lock',
    'delayQueue',
    'transactions',
    'connectTimeout',
    'unreachableTimeout',
    'evictionPolicyCheck',
    'tracing',
  ]),
  lock: keysOf<LockDefaults>()(['leaseTime', 'waitTimeout', 'watchdog', 'fair', 'syncReplicas']),
  syncReplicas: keysOf<SyncReplicasOptions>()(['replicas', 'timeout']),
  redlock: keysOf<RedlockOptions>()(['clients', 'driftFactor', 'requestTimeout', 'retryJitter', 'retryDelay']),
  delayQueue: keysOf<DelayQueueDefaults>()([
    'concurrency',
    'visibilityTimeout',
    'maxAttempts',
    'backoff',
    'shutdownTimeout',
    'retention',
    'maxPayloadBytes',
    'topics',
    'outbox',
    'outboxRelay',
  ]),
  backoff: keysOf<BackoffOptions>()(['delay', 'factor', 'maxDelay', 'jitter']),
  retention: keysOf<RetentionOptions>()(['deadLetterMaxCount', 'deadLetterMaxAge']),
  outboxRelay: keysOf<OutboxRelayOptions>()(['pollInterval', 'batchSize', 'minAge', 'claimLease']),
  topic: keysOf<DelayQueueTopicOptions>()(['shards']),
} as const;
