import type { RedisScript } from '../../core/redis/redis-script.js';
import { acquireFairLockScript } from './acquire-fair-lock.lua.js';
import { acquireLockScript } from './acquire-lock.lua.js';
import { acquirePermitScript } from './acquire-permit.lua.js';
import { acquireReadLockScript } from './acquire-read-lock.lua.js';
import { acquireWriteLockScript } from './acquire-write-lock.lua.js';
import { leaveFairQueueScript } from './leave-fair-queue.lua.js';
import { leaveReadWriteWritersScript } from './leave-read-write-writers.lua.js';
import { readLockScript } from './read-lock.lua.js';
import { readSemaphoreScript } from './read-semaphore.lua.js';
import { releaseLockScript } from './release-lock.lua.js';
import { releasePermitScript } from './release-permit.lua.js';
import { releaseReadWriteLockScript } from './release-read-write-lock.lua.js';
import { renewLocksScript } from './renew-locks.lua.js';
import { renewPermitsScript } from './renew-permits.lua.js';
import { renewReadWriteLocksScript } from './renew-read-write-locks.lua.js';

/** Every script of the lock engine (one per `*.lua.ts` file of this folder), for preloading at bootstrap. */
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
  leaveReadWriteWritersScript,
  acquirePermitScript,
  releasePermitScript,
  renewPermitsScript,
  readLockScript,
  readSemaphoreScript,
];
