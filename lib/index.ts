/**
 * `nestjs-redis-lock`: the module, the lock and delayed-job services, their decorators, options,
 * events and errors. Everything not exported here is internal and may change in any release.
 *
 * @module nestjs-redis-lock
 */
export { RedisLockModule } from './redis-lock.module.js';
export type {
  BackoffOptions,
  DelayQueueDefaults,
  DelayQueueTopicOptions,
  OutboxRelayOptions,
  EvictionPolicyCheck,
  LockDefaults,
  RedisConnectionOptions,
  RedisLockModuleOptions,
  RedlockClientOptions,
  RedlockOptions,
  RetentionOptions,
  SyncReplicasOptions,
} from './core/options/redis-lock-module-options.interface.js';

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
  type OutboxRelayedEvent,
  type OutboxRelayFailedEvent,
  type OutboxRowParkedEvent,
  type LeadershipAcquiredEvent,
  type LeadershipLostEvent,
  type OneInstanceAcquiredEvent,
  type OneInstanceLostEvent,
  type OneInstanceSkippedEvent,
} from './core/events/redis-lock-events.js';
export { REDIS_LOCK_CHANNELS, redisLockChannel } from './core/events/redis-lock.channels.js';
export { LockContext, type LockContextSnapshot } from './lock/lock-context.js';

export { WithLock } from './decorators/with-lock.decorator.js';
export { WithRequestLock, type RequestLockKeySource } from './decorators/with-request-lock.decorator.js';
export { WithLockInterceptor } from './decorators/with-lock.interceptor.js';
export type { LockKeySource } from './lock/key-template.js';
export type { LockUnavailableContext, OnLocked, WithLockMode, WithLockOptions } from './lock/with-lock.js';

export { DelayQueueService } from './delay-queue/delay-queue.service.js';
export { OnDelayed, type OnDelayedOptions } from './decorators/on-delayed.decorator.js';
export type { ScheduleOptions, ScheduledJob } from './delay-queue/interfaces/schedule-options.interface.js';
export type {
  OnDelayedRepeat,
  RepeatCatchUp,
  RepeatInfo,
  RepeatOptions,
  RepeatSchedule,
} from './delay-queue/interfaces/repeat-options.interface.js';
export { JobContext, type DelayedJobHandler } from './delay-queue/interfaces/job-context.interface.js';
export type { DelayedJob, DelayedJobState, DelayQueueStats } from './delay-queue/interfaces/delayed-job.interface.js';
export type { Consumer, ConsumerOptions } from './delay-queue/interfaces/consumer.interface.js';

export { OnOneInstance, type OnOneInstanceOptions } from './scheduling/on-one-instance.decorator.js';
export { LeaderElection, type LeaderElectionOptions } from './scheduling/leader-election.decorator.js';
export type { LeadershipHooks } from './scheduling/leadership-hooks.interface.js';
export { LeaderElections, type LeaderElectionStatus } from './scheduling/leader-elections.js';
export { OneInstanceLeases, type OneInstanceLease } from './scheduling/one-instance-leases.js';

export {
  TransactionSynchronizer,
  type TransactionStatus,
  type TransactionSynchronization,
} from './core/transaction/transaction-synchronizer.interface.js';
export { AsyncLocalUnitOfWork, runInTransaction } from './core/transaction/async-local-unit-of-work.js';
export { JobOutboxStore, type OutboxJob, type OutboxRow } from './core/outbox-port/job-outbox-store.js';
export type { OutboxRowKind } from './core/outbox-port/outbox-row-kind.js';
export { OutboxTransactionMissingError } from './core/outbox-port/outbox-transaction-missing.error.js';
export { OutboxStoreClosedError } from './core/outbox-port/outbox-store-closed.error.js';
export type { OutboxRelayStats } from './delay-queue/outbox-relay/outbox-relay-stats.js';

export { RedisLockError } from './core/errors/redis-lock.error.js';
export { LockAcquireTimeoutError } from './core/errors/lock-acquire-timeout.error.js';
export { LockAcquireAbortedError } from './core/errors/lock-acquire-aborted.error.js';
export { LeadershipSteppedDownError } from './core/errors/leadership-stepped-down.error.js';
export { LockLostError } from './core/errors/lock-lost.error.js';
export { LockNotHeldError } from './core/errors/lock-not-held.error.js';
export { LockNotReplicatedError } from './core/errors/lock-not-replicated.error.js';
export { LockUpgradeError } from './core/errors/lock-upgrade.error.js';
export { LockKindConflictError, type LockKind } from './core/errors/lock-kind-conflict.error.js';
export { LockServiceClosedError } from './core/errors/lock-service-closed.error.js';
export { InvalidLockKeyError } from './core/errors/invalid-lock-key.error.js';
export { InvalidLockKeyTemplateError } from './core/errors/invalid-lock-key-template.error.js';
export { UnresolvedLockKeyError } from './core/errors/unresolved-lock-key.error.js';
export { LockServiceUnavailableError } from './core/errors/lock-service-unavailable.error.js';
export { InvalidOptionsError } from './core/errors/invalid-options.error.js';
export { UnsupportedInRedlockModeError } from './core/errors/unsupported-in-redlock-mode.error.js';
export { InvalidJobError } from './core/errors/invalid-job.error.js';
export { InvalidTopicError } from './core/errors/invalid-topic.error.js';
export { DuplicateDelayedHandlerError } from './core/errors/duplicate-delayed-handler.error.js';
export { DelayQueueAlreadyStartedError } from './core/errors/delay-queue-already-started.error.js';
export { RedisLockModuleNotVisibleError } from './core/errors/redis-lock-module-not-visible.error.js';
export { JobVisibilityLostError } from './core/errors/job-visibility-lost.error.js';
export { ConsumerShutdownTimeoutError } from './core/errors/consumer-shutdown-timeout.error.js';
export { DelayQueueClosedError } from './core/errors/delay-queue-closed.error.js';
export { RedisConnectionError } from './core/errors/redis-connection.error.js';
export { RedisEvictionPolicyError } from './core/errors/redis-eviction-policy.error.js';
export { RedisCommandError } from './core/errors/redis-command.error.js';
export { lockReconnectStrategy } from './core/redis/reconnect-strategy.js';
