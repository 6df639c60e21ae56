import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { OnOneInstance, RedisLockModule, WithLock } from '../../lib/index.js';
import { rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';

const keyPrefix = uniquePrefix();

@Injectable()
class Billing {
  runs = 0;

  @WithLock('billing:close')
  async close(): Promise<string[]> {
    this.runs++;
    const redis = rawRedis();
    try {
      return await redis.keys(`${keyPrefix}*`); // the section's lock, held now
    } finally {
      redis.disconnect();
    }
  }

  @OnOneInstance({ key: 'billing.nightly', ttl: 5_000 })
  async nightly(): Promise<string> {
    return 'ran';
  }
}

/** The advice of the "not visible" errors: a shared module that imports forRoot and exports RedisLockModule. */
@Module({ imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix })], exports: [RedisLockModule] })
class LocksModule {}

@Module({ imports: [LocksModule], providers: [Billing] })
class BillingWithSharedModule {}

@Module({ providers: [Billing] })
class BillingAlone {}

describe('@WithLock / @OnOneInstance in a module that does not import forRoot', () => {
  it('work through a shared module that imports RedisLockModule.forRoot(...) and exports RedisLockModule', async () => {
    const app = await Test.createTestingModule({ imports: [LocksModule, BillingWithSharedModule] }).compile();
    try {
      await app.init();
      const billing = app.get(Billing);
      expect((await billing.close()).join()).toContain('billing:close');
      expect(billing.runs).toBe(1);
      expect(await billing.nightly()).toBe('ran');
    } finally {
      await app.close();
    }
  });

  it('fail otherwise (forRoot without isGlobal elsewhere), with advice that works', async () => {
    const error = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix() }), BillingAlone],
    })
      .compile()
      .then(
        async (app) => {
          await app.close();
          return undefined;
        },
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/needs RedisLockModule/);
    expect(message).not.toMatch(/import RedisLockModule into this module/);
    expect(message).toMatch(/isGlobal: true/);
    expect(message).toMatch(/exports RedisLockModule/);
  });
});
