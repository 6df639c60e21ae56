import { randomBytes } from 'node:crypto';

/**
 * A key prefix no other test uses (`<label>-<8 hex digits>`), so testing modules, test files and
 * Jest workers can share one Redis without seeing each other's locks and jobs. Modules that should
 * contend for the same locks (two "instances" of an app) get the same prefix.
 *
 * @example
 * import { uniqueKeyPrefix } from 'nestjs-redis-lock/testing';
 *
 * const keyPrefix = uniqueKeyPrefix('orders'); // e.g. 'orders-3f9a1c07'
 * const instanceA = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix } });
 * const instanceB = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix } });
 */
export function uniqueKeyPrefix(label = 'test'): string {
  if (!/^[A-Za-z0-9_.-]{1,40}$/.test(label)) {
    throw new TypeError(`uniqueKeyPrefix: label ${JSON.stringify(label)} must be 1-40 letters, digits, '_', '.' or '-'`);
  }
  return `${label}-${randomBytes(4).toString('hex')}`;
}
