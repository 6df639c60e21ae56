import type { RedisScript } from '../../redis/redis-script';
import { acquireFairLockScript } from './acquire-fair-lock.lua';
import { acquireLockScript } from './acquire-lock.lua';
import { leaveFairQueueScript } from './leave-fair-queue.lua';
import {
  acquireReadLockScript,
  acquireWriteLockScript,
  leaveWritersScript,
  releaseReadWriteLockScript,
  renewReadWriteLocksScript,
} from './read-write-lock.lua';
import { releaseLockScript } from './release-lock.lua';
import { renewLocksScript } from './renew-locks.lua';
import { acquirePermitScript, releasePermitScript, renewPermitsScript } from './semaphore.lua';

/** Every script of the lock family, for preloading at bootstrap. */
export const ALL_LOCK_SCRIPTS: readonly RedisScript[] = [
  acquireLockScript,
  releaseLockScript,
  renewLocksScript,
  acquireFairLockScript,
  leaveFairQueueScript,
  acquireReadLockScript,
  acquireWriteLockScript,
  releaseReadWriteLockScript,
  renewReadWriteLocksScript,
  leaveWritersScript,
  acquirePermitScript,
  releasePermitScript,
  renewPermitsScript,
];
