import type { RedisScript } from '../../core/redis/redis-script.js';
import { acquireFairLockScript } from './fair/acquire-fair-lock.lua.js';
import { acquireLockScript } from './mutex/acquire-lock.lua.js';
import { acquirePermitScript } from './semaphore/acquire-permit.lua.js';
import { acquireReadLockScript } from './read-write/acquire-read-lock.lua.js';
import { acquireWriteLockScript } from './read-write/acquire-write-lock.lua.js';
import { leaveFairQueueScript } from './fair/leave-fair-queue.lua.js';
import { leaveReadWriteWritersScript } from './read-write/leave-read-write-writers.lua.js';
import { readLockScript } from './mutex/read-lock.lua.js';
import { readSemaphoreScript } from './semaphore/read-semaphore.lua.js';
import { releaseLockScript } from './mutex/release-lock.lua.js';
import { releasePermitScript } from './semaphore/release-permit.lua.js';
import { releaseReadWriteLockScript } from './read-write/release-read-write-lock.lua.js';
import { renewLocksScript } from './mutex/renew-locks.lua.js';
import { renewPermitsScript } from './semaphore/renew-permits.lua.js';
import { renewReadWriteLocksScript } from './read-write/renew-read-write-locks.lua.js';

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
