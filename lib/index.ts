/**
 * `nestjs-redis-lock`: the module, the lock and delayed-job services, their decorators, options,
 * events and errors. Everything not exported here is internal and may change in any release.
 *
 * @module nestjs-redis-lock
 */
export { RedisLockModule } from './redis-lock.module.js';
export type { RedisLockModuleAsyncOptions } from './redis-lock.module-arguments.js';
export type {
  BackoffOptions,
  DelayQueueDefaults,
  DelayQueueTopicOptions,
  EvictionPolicyCheck,
  LockDefaults,
  OutboxRelayOptions,
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
export { RedisLockEvents } from './core/events/redis-lock-events.js';
export type { RedisLockEventArgs, RedisLockEventMap, RedisLockEventName } from './core/events/redis-lock-event-map.js';
export type { LockAcquiredEvent, LockLostEvent, LockReleasedEvent, LockTimeoutEvent } from './core/events/lock-events.js';
export type {
  JobCancelledEvent,
  JobDeadEvent,
  JobFailedEvent,
  JobLogDroppedEvent,
  JobProgressEvent,
  JobRateLimitedEvent,
  JobRecoveredEvent,
  JobRetriedEvent,
  JobScheduledEvent,
  JobScheduleLostEvent,
  JobScheduleRetryingEvent,
  JobStartedEvent,
  JobSucceededEvent,
  OutboxRelayedEvent,
  OutboxRelayFailedEvent,
  OutboxRowParkedEvent,
} from './core/events/job-events.js';
export type {
  LeadershipAcquiredEvent,
  LeadershipLostEvent,
  OneInstanceAcquiredEvent,
  OneInstanceLostEvent,
  OneInstanceSkippedEvent,
} from './core/events/scheduling-events.js';
export type { JobEventMap } from './core/events/job-event-map.js';
export { REDIS_LOCK_CHANNELS } from './core/events/redis-lock.channels.js';
export { LockContext, type LockContextSnapshot } from './lock/lock-context.js';

export { WithLock } from './decorators/with-lock.decorator.js';
export type { LockKeySource } from './decorators/key-template.js';
export { WithRequestLock, type RequestLockKeySource } from './decorators/with-request-lock.decorator.js';
export { RequestLockInterceptor } from './decorators/request-lock.interceptor.js';
export type { LockUnavailableContext, OnLocked, WithLockMode, WithLockOptions } from './decorators/with-lock-options.js';

export { DelayQueueService } from './delay-queue/delay-queue.service.js';
export { OnDelayed, type OnDelayedOptions } from './decorators/on-delayed.decorator.js';
export { OnJobEvent } from './decorators/on-job-event.decorator.js';
export { defineTopic, type NotInferred, type Topic, type TopicRef } from './delay-queue/typed-topic.js';
export type { ScheduledJob, ScheduleOptions } from './delay-queue/interfaces/schedule-options.interface.js';
export type { DedupeOptions } from './delay-queue/interfaces/dedupe-options.interface.js';
export type { ScheduleResult, ScheduleStatus } from './delay-queue/interfaces/schedule-result.interface.js';
export type { RepeatCatchUp, RepeatInfo, RepeatOptions, RepeatSchedule } from './delay-queue/interfaces/repeat-options.interface.js';
export { JobContext, type DelayedJobHandler } from './delay-queue/interfaces/job-context.interface.js';
export type { DelayedJob, DelayedJobState, DelayQueueStats } from './delay-queue/interfaces/delayed-job.interface.js';
export type { Consumer, ConsumerOptions, KeepCompletedOptions } from './delay-queue/interfaces/consumer.interface.js';

export { OnOneInstance, type OnOneInstanceOptions } from './decorators/on-one-instance.decorator.js';
export { LeaderElection, type LeaderElectionOptions } from './decorators/leader-election.decorator.js';
export type { LeadershipHooks } from './scheduling/leadership-hooks.interface.js';
export { LeaderElections, type LeaderElectionStatus } from './scheduling/leader-elections.js';

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
export { OutboxUnavailableError } from './core/outbox-port/outbox-unavailable.error.js';
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
export { UnresolvedLockKeyError } from './core/errors/unresolved-lock-key.error.js';
export { InvalidOptionsError } from './core/errors/invalid-options.error.js';
export { InvalidJobError } from './core/errors/invalid-job.error.js';
export { InvalidTopicError } from './core/errors/invalid-topic.error.js';
export { JobVisibilityLostError } from './core/errors/job-visibility-lost.error.js';
export { JobCancelledError } from './core/errors/job-cancelled.error.js';
export { TopicHasRunningJobsError } from './core/errors/topic-has-running-jobs.error.js';
export { UnrecoverableJobError } from './core/errors/unrecoverable-job.error.js';
export { JobRateLimitedError } from './core/errors/job-rate-limited.error.js';
export { JobDeadError } from './core/errors/job-dead.error.js';
export { JobNotFoundError } from './core/errors/job-not-found.error.js';
export { JobWaitTimeoutError } from './core/errors/job-wait-timeout.error.js';
export { ConsumerShutdownTimeoutError } from './core/errors/consumer-shutdown-timeout.error.js';
export { DelayQueueClosedError } from './core/errors/delay-queue-closed.error.js';
export { DuplicateDelayedHandlerError } from './core/errors/duplicate-delayed-handler.error.js';
export { WriteFenceExpiredError } from './core/errors/write-fence-expired.error.js';
export { RedisConnectionError } from './core/errors/redis-connection.error.js';
export { RedisEvictionPolicyError } from './core/errors/redis-eviction-policy.error.js';
export { RedisCommandError } from './core/errors/redis-command.error.js';
export { lockReconnectStrategy } from './core/redis/lock-reconnect-strategy.js';
