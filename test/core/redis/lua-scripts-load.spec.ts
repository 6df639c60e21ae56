import { Redis } from 'ioredis';
import type { RedisScript } from '../../../lib/core/redis/redis-script.js';
import { ALL_DELAY_QUEUE_SCRIPTS } from '../../../lib/delay-queue/scripts/all-delay-queue-scripts.js';
import { ALL_REDLOCK_SCRIPTS } from '../../../lib/lock/redlock/scripts/all-redlock-scripts.js';
import { ALL_LOCK_SCRIPTS } from '../../../lib/lock/kinds/all-lock-kinds.js';
import { testRedisUrl } from '../../support/test-app.js';

/*
 * Every script an engine preloads compiles on the Redis the suite runs on (Redis 7, the version
 * sharded pub/sub needs): SCRIPT LOAD parses the whole text, snippets included, so a Lua syntax
 * error anywhere fails here by name instead of at a script's first use. Redis answers with the
 * SHA1 of the text, which must be the SHA the script sends with EVALSHA.
 */

const ENGINES: ReadonlyArray<readonly [string, readonly RedisScript[]]> = [
  ['lock', ALL_LOCK_SCRIPTS],
  ['redlock', ALL_REDLOCK_SCRIPTS],
  ['delay-queue', ALL_DELAY_QUEUE_SCRIPTS],
];

describe('Lua scripts load on Redis', () => {
  let redis: Redis;

  beforeAll(() => {
    redis = new Redis(testRedisUrl(), { lazyConnect: true, maxRetriesPerRequest: 3 });
  });
  afterAll(() => redis.quit());

  it('runs on Redis 7 or later', async () => {
    const info = await redis.info('server');
    const major = Number(/^redis_version:(\d+)\./m.exec(info)?.[1]);
    expect(major).toBeGreaterThanOrEqual(7);
  });

  describe.each(ENGINES)('%s engine', (_engine, scripts) => {
    it.each(scripts.map((script) => [script.name, script] as const))('%s', async (_name, script) => {
      await expect(redis.script('LOAD', script.source)).resolves.toBe(script.sha);
    });
  });
});
