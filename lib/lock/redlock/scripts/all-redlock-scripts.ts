import type { RedisScript } from '../../../core/redis/redis-script.js';
import { acquireLockScript } from '../../kinds/mutex/acquire-lock.lua.js';
import { renewLocksScript } from '../../kinds/mutex/renew-locks.lua.js';
import { raiseFenceScript } from './raise-fence.lua.js';
import { releaseRedlockScript } from './release-redlock.lua.js';

/**
 * Every script a Redlock master runs, for preloading. Acquire and renew are the single-Redis
 * scripts: per master, a Redlock hold is an ordinary reentrant hold.
 */
export const ALL_REDLOCK_SCRIPTS: readonly RedisScript[] = [acquireLockScript, releaseRedlockScript, renewLocksScript, raiseFenceScript];
