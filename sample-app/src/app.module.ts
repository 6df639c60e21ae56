import { Module, type DynamicModule } from '@nestjs/common';
import { RedisLockModule } from 'nestjs-redis-lock';
import { RedisLockDashboardModule } from 'nestjs-redis-lock/dashboard';
import { RedisLockHealthModule } from 'nestjs-redis-lock/health';
import { RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { SAMPLE_CONFIG, type SampleConfig } from './config/sample-config.js';
import { Database } from './database/database.js';
import { DatabaseModule } from './database/database.module.js';
import { FulfilmentModule } from './fulfilment/fulfilment.module.js';
import { HealthController } from './health/health.controller.js';
import { InventoryModule } from './inventory/inventory.module.js';
import { MetricsController } from './observability/metrics.controller.js';
import { ReadinessController } from './observability/readiness.controller.js';
import { OrdersModule } from './orders/orders.module.js';
import { ReportsModule } from './reports/reports.module.js';

/** The orders service. `register(config)` so tests and the demo can pass their own settings. */
@Module({})
export class AppModule {
  static register(config: SampleConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        // Jobs scheduled in a database transaction go through the outbox: an order's `order.expire`
        // commits with the order, and runs even if this process dies after COMMIT or Redis is down.
        RedisLockModule.forRootAsync({
          isGlobal: true,
          inject: [Database],
          useFactory: (db: Database) => ({
            redis: config.redisUrl,
            keyPrefix: config.keyPrefix,
            delayQueue: {
              concurrency: 4,
              shutdownTimeout: 5_000,
              outbox: db.jobOutbox(),
              outboxRelay: { claimLease: config.outboxClaimLeaseMs },
            },
          }),
        }),
        // A registry per application, so tests and the demo can run several apps in one process.
        RedisLockMetricsModule.forRoot({ registry: new Registry(), topics: ['order.expire'] }),
        RedisLockHealthModule,
        // Locks and jobs at /dashboard. With no guard it serves loopback clients only (the service
        // listens on 127.0.0.1 anyway). The demo's operator retries dead jobs from the page, so actions
        // are turned on explicitly (the dashboard is read-only unless told otherwise); a real deployment
        // would put its authentication guard in `guards` and give most people `readOnly`.
        RedisLockDashboardModule.forRoot({
          path: '/dashboard',
          readOnly: config.dashboardReadOnly ?? false,
          history: config.dashboardHistory,
        }),
        DatabaseModule,
        OrdersModule,
        InventoryModule,
        FulfilmentModule,
        ReportsModule.register(config),
      ],
      controllers: [HealthController, ReadinessController, MetricsController],
      providers: [{ provide: SAMPLE_CONFIG, useValue: config }],
      exports: [SAMPLE_CONFIG],
    };
  }
}
