import type { RedisScript } from '../../core/redis/redis-script.js';
import { acquireFairLockScript } from './acquire-fair-lock.lua.js';
import { acquireLockScript } from './acquire-lock.lua.js';
import { leaveFairQueueScript } from './leave-fair-queue.lua.js';
import {
  acquireReadLockScript,
  acquireWriteLockScript,
  leaveWritersScript,
  releaseReadWriteLockScript,
  renewReadWriteLocksScript,
} from './read-write-lock.lua.js';
import { releaseLockScript } from './release-lock.lua.js';
import { renewLocksScript } from './renew-locks.lua.js';
import { acquirePermitScript, releasePermitScript, renewPermitsScript } from './semaphore.lua.js';

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
