/**
 * `nestjs-redis-lock/testing` as a user's own test would use it: a test Redis (REDIS_URL, else a
 * private redis-server the package starts), a testing module with RedisLockModule on its own key
 * prefix, a lock taken through it, and a close that removes the module's keys.
 */
import { LockService } from 'nestjs-redis-lock';
import { closeRedisLockTestingModule, initRedisLockTestingModule, startTestRedis, uniqueKeyPrefix } from 'nestjs-redis-lock/testing';
import { assert } from './check-list.js';

export async function checkTestingSubpath(): Promise<void> {
  const redis = await startTestRedis();
  try {
    const keyPrefix = uniqueKeyPrefix('compat');
    const moduleRef = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix } });
    try {
      const token = await moduleRef.get(LockService).using('compat:testing', (lock) => lock.fencingToken);
      assert(/^[1-9][0-9]*$/.test(token), `a lock through the testing module gave fencing token ${JSON.stringify(token)}`);
    } finally {
      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    }
  } finally {
    await redis.stop();
  }
}
