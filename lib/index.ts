// The public surface. Everything not exported here is internal and may change in any release.
export { RedisLockModule } from './redis-lock.module';
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
} from './options/redis-lock-module-options.interface';

export { LockService } from './lock/lock.service';
export type { LockHandle } from './lock/interfaces/lock-handle.interface';
export type { AcquireOptions } from './lock/interfaces/acquire-options.interface';
export type { LockKindOptions, ReadWriteLock, Semaphore } from './lock/interfaces/lock-kinds.interface';
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
} from './lock/lock-events';
export { LockContext, type LockContextSnapshot } from './lock/lock-context';

export { WithLock } from './decorators/with-lock.decorator';
export { WithRequestLock, type RequestLockKeySource } from './decorators/with-request-lock.decorator';
export { WithLockInterceptor } from './decorators/with-lock.interceptor';
export type { LockKeySource } from './lock/key-template';
export type { LockUnavailableContext, OnLocked, WithLockMode, WithLockOptions } from './lock/with-lock';

export { DelayQueueService } from './delay-queue/delay-queue.service';
export { OnDelayed, type OnDelayedOptions } from './decorators/on-delayed.decorator';
export type { ScheduleOptions, ScheduledJob } from './delay-queue/interfaces/schedule-options.interface';
export type { DelayedJobHandler, JobContext } from './delay-queue/interfaces/job-context.interface';
export type { DelayedJob, DelayedJobState, DelayQueueStats } from './delay-queue/interfaces/delayed-job.interface';
export type { Consumer, ConsumerOptions } from './delay-queue/interfaces/consumer.interface';

export {
  TransactionSynchronizer,
  type TransactionStatus,
  type TransactionSynchronization,
} from './transaction/transaction-synchronizer.interface';
export { AsyncLocalUnitOfWork, runInTransaction } from './transaction/async-local-unit-of-work';

export { RedisLockError } from './errors/redis-lock.error';
export { LockAcquireTimeoutError } from './errors/lock-acquire-timeout.error';
export { LockAcquireAbortedError } from './errors/lock-acquire-aborted.error';
export { LockLostError } from './errors/lock-lost.error';
export { LockNotHeldError } from './errors/lock-not-held.error';
export { LockNotReplicatedError } from './errors/lock-not-replicated.error';
export { LockUpgradeError } from './errors/lock-upgrade.error';
export { LockKindConflictError, type LockKind } from './errors/lock-kind-conflict.error';
export { LockServiceClosedError } from './errors/lock-service-closed.error';
export { InvalidLockKeyError } from './errors/invalid-lock-key.error';
export { InvalidLockKeyTemplateError } from './errors/invalid-lock-key-template.error';
export { UnresolvedLockKeyError } from './errors/unresolved-lock-key.error';
export { LockServiceUnavailableError } from './errors/lock-service-unavailable.error';
export { InvalidOptionsError } from './errors/invalid-options.error';
export { UnsupportedInRedlockModeError } from './errors/unsupported-in-redlock-mode.error';
export { InvalidJobError } from './errors/invalid-job.error';
export { InvalidTopicError } from './errors/invalid-topic.error';
export { DuplicateDelayedHandlerError } from './errors/duplicate-delayed-handler.error';
export { JobVisibilityLostError } from './errors/job-visibility-lost.error';
export { ConsumerShutdownTimeoutError } from './errors/consumer-shutdown-timeout.error';
export { DelayQueueClosedError } from './errors/delay-queue-closed.error';
export { RedisConnectionError } from './errors/redis-connection.error';
export { RedisEvictionPolicyError } from './errors/redis-eviction-policy.error';
export { RedisCommandError } from './errors/redis-command.error';
