import { Redis as IovalkeyRedis } from 'iovalkey';
import { createClient } from 'redis';
import { LockService, type RedisConnectionOptions } from '../../lib/index.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { lockModuleStartupFailure, startLockModule } from '../support/module-startup.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';

/**
 * The `redis` option's driver: named with `driver`, or detected from a client passed in; a wrong
 * name, a client of no known driver, or settings that belong to another driver fail bootstrap
 * naming the option. (Each driver's transport has its own spec in this folder.)
 */
describe('the redis option: drivers', () => {
  it("runs the module on iovalkey with { driver: 'iovalkey', url }: its client is iovalkey's", async () => {
    const app = await startLockModule({ redis: { driver: 'iovalkey', url: testRedisUrl() }, keyPrefix: uniquePrefix('drv') });
    try {
      expect(app.get(RedisConnection).client).toBeInstanceOf(IovalkeyRedis);
      const lock = await app.get(LockService).acquire('iovalkey-named');
      await lock.release();
    } finally {
      await app.close();
    }
  });

  it('detects an iovalkey client passed as { client }, uses it and leaves it open at shutdown', async () => {
    const mine = new IovalkeyRedis(testRedisUrl());
    try {
      const app = await startLockModule({ redis: { client: mine }, keyPrefix: uniquePrefix('drv') });
      expect(app.get(RedisConnection).client).toBe(mine);
      const lock = await app.get(LockService).acquire('iovalkey-detected');
      await lock.release();
      await app.close();
      expect(mine.status).toBe('ready');
      expect(await mine.ping()).toBe('PONG');
    } finally {
      mine.disconnect();
    }
  });

  it.each(['iovalkey', 'node-redis', 'valkey-glide'] as const)(
    'connects on first use when bootstrap does not check Redis (connectTimeout: 0), driver %s',
    async (driver) => {
      const redis = { driver, url: testRedisUrl() } as RedisConnectionOptions;
      const app = await startLockModule({ redis, keyPrefix: uniquePrefix('drv'), connectTimeout: 0 });
      try {
        const lock = await app.get(LockService).acquire('first-use');
        expect(lock.held).toBe(true);
        await lock.release();
      } finally {
        await app.close();
      }
    },
  );

  it('refuses a driver name it does not know, listing the ones it does', async () => {
    const error = await lockModuleStartupFailure({
      redis: { driver: 'redis-py', url: testRedisUrl() } as unknown as RedisConnectionOptions,
    });
    expectInvalidOption(error, 'redis.driver', '"redis-py"', "'ioredis', 'iovalkey', 'node-redis', 'valkey-glide'");
  });

  it('refuses a client of no known driver', async () => {
    const error = await lockModuleStartupFailure({ redis: { client: { get: () => undefined } } });
    expectInvalidOption(error, 'redis.client', 'node-redis', 'GLIDE', 'ioredis');
  });

  it('refuses url beside a client that can be copied (url is for a GLIDE client only)', async () => {
    const mine = createClient({ url: testRedisUrl() });
    const error = await lockModuleStartupFailure({ redis: { client: mine, url: testRedisUrl() } });
    expectInvalidOption(error, 'redis.url', 'node-redis', 'duplicate()');
  });

  it('refuses a driver that contradicts the client passed in', async () => {
    const mine = new IovalkeyRedis(testRedisUrl(), { lazyConnect: true });
    const error = await lockModuleStartupFailure({ redis: { client: mine, driver: 'node-redis' } as unknown as RedisConnectionOptions });
    expectInvalidOption(error, 'redis.driver', 'iovalkey client');
  });

  it('refuses GLIDE addresses that are not { host, port? }, and url together with addresses', async () => {
    const bad = await lockModuleStartupFailure({
      redis: { driver: 'valkey-glide', addresses: [{ port: 1 }] } as unknown as RedisConnectionOptions,
    });
    expectInvalidOption(bad, 'redis.addresses', '{ host, port? }');
    const both = await lockModuleStartupFailure({
      redis: { driver: 'valkey-glide', url: testRedisUrl(), addresses: [{ host: '127.0.0.1' }] },
    });
    expectInvalidOption(both, 'redis.addresses', 'not both');
  });
});
