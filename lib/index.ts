// The public surface. Everything not exported here is internal and may change in any release.
export { RedisLockModule } from './redis-lock.module.js';
export type {
  BackoffOptions,
  DelayQueueDefaults,
  DelayQueueTopicOptions,
  EvictionPolicyCheck,
  LockDefaults,
  RedisConnectionOptions,
  RedisLockModuleOptions,
  RedlockClientOptions,
  RedlockOptions,
  RetentionOptions,
  SyncReplicasOptions,
} from './options/redis-lock-module-options.interface.js';

export { LockService } from './lock/lock.service.js';
export type { LockHandle } from './lock/interfaces/lock-handle.interface.js';
export type { AcquireOptions } from './lock/interfaces/acquire-options.interface.js';
export type { LockKindOptions, ReadWriteLock, Semaphore } from './lock/interfaces/lock-kinds.interface.js';
export {
  RedisLockEvents,
  type RedisLockEventMap,
  type RedisLockEventName,
  type LockAcquiredEvent,
  type LockReleasedEvent,
  type LockLostEvent,
  type LockTimeoutEvent,
  type JobScheduledEvent,
  type JobStartedEvent,
  type JobSucceededEvent,
  type JobFailedEvent,
  type JobRetriedEvent,
  type JobDeadEvent,
  type JobRecoveredEvent,
  type JobScheduleRetryingEvent,
  type JobScheduleLostEvent,
} from './lock/lock-events.js';
export { REDIS_LOCK_CHANNELS, redisLockChannel } from './lock/redis-lock.channels.js';
export { LockContext, type LockContextSnapshot } from './lock/lock-context.js';

export { WithLock } from './decorators/with-lock.decorator.js';
export { WithRequestLock, type RequestLockKeySource } from './decorators/with-request-lock.decorator.js';
export { WithLockInterceptor } from './decorators/with-lock.interceptor.js';
export type { LockKeySource } from './lock/key-template.js';
export type { LockUnavailableContext, OnLocked, WithLockMode, WithLockOptions } from './lock/with-lock.js';

export { DelayQueueService } from './delay-queue/delay-queue.service.js';
export { OnDelayed, type OnDelayedOptions } from './decorators/on-delayed.decorator.js';
export type { ScheduleOptions, ScheduledJob } from './delay-queue/interfaces/schedule-options.interface.js';
export type { DelayedJobHandler, JobContext } from './delay-queue/interfaces/job-context.interface.js';
export type { DelayedJob, DelayedJobState, DelayQueueStats } from './delay-queue/interfaces/delayed-job.interface.js';
export type { Consumer, ConsumerOptions } from './delay-queue/interfaces/consumer.interface.js';

export {
  TransactionSynchronizer,
  type TransactionStatus,
  type TransactionSynchronization,
} from './transaction/transaction-synchronizer.interface.js';
export { AsyncLocalUnitOfWork, runInTransaction } from './transaction/async-local-unit-of-work.js';

export { RedisLockError } from './errors/redis-lock.error.js';
export { LockAcquireTimeoutError } from './errors/lock-acquire-timeout.error.js';
export { LockAcquireAbortedError } from './errors/lock-acquire-aborted.error.js';
export { LockLostError } from './errors/lock-lost.error.js';
export { LockNotHeldError } from './errors/lock-not-held.error.js';
export { LockNotReplicatedError } from './errors/lock-not-replicated.error.js';
export { LockUpgradeError } from './errors/lock-upgrade.error.js';
export { LockKindConflictError, type LockKind } from './errors/lock-kind-conflict.error.js';
export { LockServiceClosedError } from './errors/lock-service-closed.error.js';
export { InvalidLockKeyError } from './errors/invalid-lock-key.error.js';
export { InvalidLockKeyTemplateError } from './errors/invalid-lock-key-template.error.js';
export { UnresolvedLockKeyError } from './errors/unresolved-lock-key.error.js';
export { LockServiceUnavailableError } from './errors/lock-service-unavailable.error.js';
export { InvalidOptionsError } from './errors/invalid-options.error.js';
export { UnsupportedInRedlockModeError } from './errors/unsupported-in-redlock-mode.error.js';
export { InvalidJobError } from './errors/invalid-job.error.js';
export { InvalidTopicError } from './errors/invalid-topic.error.js';
export { DuplicateDelayedHandlerError } from './errors/duplicate-delayed-handler.error.js';
export { JobVisibilityLostError } from './errors/job-visibility-lost.error.js';
export { ConsumerShutdownTimeoutError } from './errors/consumer-shutdown-timeout.error.js';
export { DelayQueueClosedError } from './errors/delay-queue-closed.error.js';
export { RedisConnectionError } from './errors/redis-connection.error.js';
export { RedisEvictionPolicyError } from './errors/redis-eviction-policy.error.js';
export { RedisCommandError } from './errors/redis-command.error.js';
export { lockReconnectStrategy } from './redis/reconnect-strategy.js';
