import type { RedisScript } from '../../../redis/redis-script';
import { acquireLockScript } from '../../scripts/acquire-lock.lua';
import { renewLocksScript } from '../../scripts/renew-locks.lua';
import { raiseFenceScript } from './raise-fence.lua';
import { releaseRedlockScript } from './release-redlock.lua';

/**
 * Every script a Redlock master runs, for preloading. Acquire and renew are the single-Redis
 * scripts: per master, a Redlock hold is an ordinary reentrant hold.
 */
export const ALL_REDLOCK_SCRIPTS: readonly RedisScript[] = [
  acquireLockScript,
  releaseRedlockScript,
  renewLocksScript,
  raiseFenceScript,
];
