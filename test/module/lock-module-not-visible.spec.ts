import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { OnOneInstance, WithLock } from '../../lib/index.js';
import { RedisLockDashboardModule } from '../../lib/observability/dashboard/index.js';
import { RedisLockHealthModule } from '../../lib/observability/health/index.js';
import { RedisLockMetricsModule } from '../../lib/observability/metrics/index.js';
import { PaymentsWithoutLockModule } from '../fixtures/payments-without-lock-module.js';
import { compileErrorBesideLockModule } from '../support/module-startup.js';

/** What a developer needs from the message: the module to register, and how. */
function expectActionable(error: Error, user: string): void {
  expect(error.message).toContain(user);
  expect(error.message).toContain('RedisLockModule');
  expect(error.message).toContain('isGlobal: true');
  expect(error.message).not.toContain('Symbol(nestjs-redis-lock:');
}

describe('a module that cannot see RedisLockModule gets an error naming it and isGlobal', () => {
  it('@WithLock on a provider of a feature module that does not import RedisLockModule', async () => {
    expectActionable(await compileErrorBesideLockModule(PaymentsWithoutLockModule), '@WithLock');
  });

  it('@OnOneInstance on a provider of such a module', async () => {
    @Injectable()
    class Reports {
      @OnOneInstance({ key: 'reports.daily' })
      async run() {}
    }
    @Module({ providers: [Reports] })
    class ReportsModule {}
    expectActionable(await compileErrorBesideLockModule(ReportsModule), '@OnOneInstance');
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
    expectActionable(await compileErrorBesideLockModule(OrdersModule), '@WithLock');
  });

  it('RedisLockMetricsModule', async () => {
    expectActionable(await compileErrorBesideLockModule(RedisLockMetricsModule.forRoot()), 'RedisLockMetricsModule');
  });

  it('RedisLockHealthModule', async () => {
    expectActionable(await compileErrorBesideLockModule(RedisLockHealthModule), 'RedisLockHealthModule');
  });

  it('RedisLockDashboardModule', async () => {
    expectActionable(await compileErrorBesideLockModule(RedisLockDashboardModule.forRoot()), 'RedisLockDashboardModule');
  });
});
