// The public surface. Everything not exported here is internal and may change in any release.
export { RedisLockModule } from './redis-lock.module';
export type {
  BackoffOptions,
  DelayQueueDefaults,
  LockDefaults,
  RedisConnectionOptions,
  RedisLockModuleOptions,
  RetentionOptions,
} from './options/redis-lock-module-options.interface';

export { LockService } from './lock/lock.service';
export type { LockHandle } from './lock/interfaces/lock-handle.interface';
export type { AcquireOptions } from './lock/interfaces/acquire-options.interface';
export type { LockKindOptions, ReadWriteLock, Semaphore } from './lock/interfaces/lock-kinds.interface';
export { RedisLockEvents, type RedisLockEventMap } from './lock/lock-events';
export { LockContext, type LockContextSnapshot } from './lock/lock-context';

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
export { LockUpgradeError } from './errors/lock-upgrade.error';
export { LockServiceClosedError } from './errors/lock-service-closed.error';
export { InvalidLockKeyError } from './errors/invalid-lock-key.error';
export { InvalidOptionsError } from './errors/invalid-options.error';
export { RedisConnectionError } from './errors/redis-connection.error';
