import { RedisLockError } from '../core/errors/redis-lock.error.js';

/**
 * `startTestRedis()` found no Redis to run the tests on: `REDIS_URL` is not set and there is no
 * `redis-server` on PATH. The message lists the ways to get one.
 *
 * @example
 * import { startTestRedis, TestRedisUnavailableError } from 'nestjs-redis-lock/testing';
 *
 * try {
 *   await startTestRedis();
 * } catch (error) {
 *   if (error instanceof TestRedisUnavailableError) console.error(error.message); // how to get a Redis
 *   throw error;
 * }
 */
export class TestRedisUnavailableError extends RedisLockError {
  readonly code = 'TEST_REDIS_UNAVAILABLE';

  constructor(cause?: unknown) {
    super(
      [
        'The tests need a real Redis server, and none was found: REDIS_URL is not set and there is no redis-server ' +
          'on PATH. Either of these works:',
        '  - set REDIS_URL=redis://host:port to a server you run (a spare database: each testing module writes keys under its own prefix);',
        '  - install redis-server on PATH: `sudo apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS).',
      ].join('\n'),
      { cause },
    );
  }
}
