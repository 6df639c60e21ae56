import { Controller, Get, Injectable, Module, type DynamicModule, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { OnOneInstance, RedisLockModule, WithLock } from '../../lib/index.js';
import { RedisLockDashboardModule } from '../../lib/observability/dashboard/index.js';
import { RedisLockHealthModule } from '../../lib/observability/health/index.js';
import { RedisLockMetricsModule } from '../../lib/observability/metrics/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';

/** Compiles an app whose RedisLockModule is registered without isGlobal, beside `imports`; returns the error. */
async function bootstrapError(...imports: Array<Type | DynamicModule>): Promise<Error> {
  // A client of the test's own, never connected, so a failed compile leaves no socket open.
  const client = new Redis(testRedisUrl(), { lazyConnect: true });
  try {
    const app = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: { client }, keyPrefix: uniquePrefix('vis'), connectTimeout: 0 }), ...imports],
    }).compile();
    await app.close();
  } catch (error) {
    return error as Error;
  } finally {
    client.disconnect();
  }
  throw new Error('bootstrap did not fail');
}

/** What a developer needs from the message: the module to register, and how. */
function expectActionable(error: Error, user: string): void {
  expect(error.message).toContain(user);
  expect(error.message).toContain('RedisLockModule');
  expect(error.message).toContain('isGlobal: true');
  expect(error.message).not.toContain('Symbol(nestjs-redis-lock:');
}

describe('a module that cannot see RedisLockModule gets an error naming it and isGlobal', () => {
  it('@WithLock on a provider of a feature module that does not import RedisLockModule', async () => {
    @Injectable()
    class Payments {
      @WithLock('order:<0>')
      async pay(_id: string) {}
    }
    @Module({ providers: [Payments] })
    class PaymentsModule {}
    expectActionable(await bootstrapError(PaymentsModule), '@WithLock');
  });

  it('@OnOneInstance on a provider of such a module', async () => {
    @Injectable()
    class Reports {
      @OnOneInstance({ key: 'reports.daily' })
      async run() {}
    }
    @Module({ providers: [Reports] })
    class ReportsModule {}
    expectActionable(await bootstrapError(ReportsModule), '@OnOneInstance');
  });

  it('@WithLock on a controller of such a module', async () => {
    @Controller('orders')
    class Orders {
      @Get()
      @WithLock('orders')
      async list() {}
    }
    @Module({ controllers: [Orders] })
    class OrdersModule {}
    expectActionable(await bootstrapError(OrdersModule), '@WithLock');
  });

  it('RedisLockMetricsModule', async () => {
    expectActionable(await bootstrapError(RedisLockMetricsModule.forRoot()), 'RedisLockMetricsModule');
  });

  it('RedisLockHealthModule', async () => {
    expectActionable(await bootstrapError(RedisLockHealthModule), 'RedisLockHealthModule');
  });

  it('RedisLockDashboardModule', async () => {
    expectActionable(await bootstrapError(RedisLockDashboardModule.forRoot()), 'RedisLockDashboardModule');
  });
});
