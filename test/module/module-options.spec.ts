import { Injectable, Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { InvalidOptionsError, LockService, RedisConnectionError, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { findFreePort } from '../../lib/testing/local-redis-server.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { lockModuleStartupFailure, startModule } from '../support/module-startup.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { NeedsLocks, NeedsLocksModule } from '../fixtures/needs-locks.js';

describe('RedisLockModule options', () => {
  it('forRoot with a URL provides a working LockService and closes the client it created', async () => {
    const app = await startModule([RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix() })]);
    const lock = await app.get(LockService).acquire('x');
    await lock.release();
    await app.close();
  });

  it('forRootAsync with useFactory + inject', async () => {
    @Injectable()
    class Settings {
      url = testRedisUrl();
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}

    const app = await startModule([
      RedisLockModule.forRootAsync({
        imports: [SettingsModule],
        inject: [Settings],
        useFactory: (s: Settings) => ({ redis: s.url, keyPrefix: uniquePrefix() }),
      }),
    ]);
    expect(await app.get(LockService).isLocked('nothing')).toBe(false);
    await app.close();
  });

  it('forRootAsync with useClass and with useExisting', async () => {
    @Injectable()
    class LockOptionsFactory {
      createRedisLockOptions(): RedisLockModuleOptions {
        return { redis: testRedisUrl(), keyPrefix: uniquePrefix() };
      }
    }
    @Module({ providers: [LockOptionsFactory], exports: [LockOptionsFactory] })
    class FactoryModule {}

    const byClass = await startModule([RedisLockModule.forRootAsync({ useClass: LockOptionsFactory })]);
    expect(await byClass.get(LockService).isLocked('nothing')).toBe(false);
    await byClass.close();

    const byExisting = await startModule([RedisLockModule.forRootAsync({ imports: [FactoryModule], useExisting: LockOptionsFactory })]);
    expect(await byExisting.get(LockService).isLocked('nothing')).toBe(false);
    await byExisting.close();
  });

  it('isGlobal makes LockService injectable everywhere', async () => {
    const app = await startModule([
      RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix(), isGlobal: true }),
      NeedsLocksModule,
    ]);
    expect(app.get(NeedsLocks).locks).toBeInstanceOf(LockService);
    await app.close();
  });

  it('never closes a client the user passed in', async () => {
    const client = new Redis(testRedisUrl());
    const app = await startModule([RedisLockModule.forRoot({ redis: { client }, keyPrefix: uniquePrefix() })]);
    const lock = await app.get(LockService).acquire('mine');
    await lock.release();
    await app.close();
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
  });

  it.each<[string, RedisLockModuleOptions, RegExp]>([
    ['keyPrefix with a brace', { keyPrefix: 'a{b' }, /`keyPrefix`/],
    ['negative lease', { lock: { leaseTime: -1 } }, /`lock.leaseTime`/],
    ['NaN wait timeout', { lock: { waitTimeout: Number.NaN } }, /`lock.waitTimeout`.*NaN/],
    ['lease given as a string', { lock: { leaseTime: '100' as never } }, /`lock.leaseTime`.*string "100"/],
    ['infinite visibility timeout', { delayQueue: { visibilityTimeout: Infinity } }, /`delayQueue.visibilityTimeout`/],
    ['fractional concurrency', { delayQueue: { concurrency: 1.5 } }, /`delayQueue.concurrency`/],
    ['not a redis URL', { redis: 'http://localhost' }, /`redis`.*redis:\/\//],
    ['empty cluster', { redis: { cluster: [] } }, /`redis.cluster`/],
    ['a client that is not one', { redis: { client: {} as never } }, /`redis.client`/],
  ])('fails at bootstrap naming the option: %s', async (_label, options, message) => {
    const error = await lockModuleStartupFailure({ redis: testRedisUrl(), ...options });
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(message);
  });

  it('fails at bootstrap on redis: null instead of connecting to the default server', async () => {
    const error = await lockModuleStartupFailure({ redis: null as never, keyPrefix: uniquePrefix() });
    expectInvalidOption(error, 'redis', 'got null; leave `redis` out for the default connection, or pass a redis:// URL');
  });

  it('starts with lock.syncReplicas: false (off)', async () => {
    const app = await startModule([
      RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix(), lock: { syncReplicas: false } }),
    ]);
    const lock = await app.get(LockService).acquire('unreplicated');
    await lock.release();
    await app.close();
  });

  it('fails at bootstrap with RedisConnectionError when Redis is not there', async () => {
    const port = await findFreePort();
    const error = await lockModuleStartupFailure({
      redis: { host: '127.0.0.1', port, retryStrategy: () => null, maxRetriesPerRequest: 0 },
      connectTimeout: 2_000,
    });
    expect(error).toBeInstanceOf(RedisConnectionError);
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).toMatch(/Check that the server is running/);
  });
});
