import { Module, type DynamicModule } from '@nestjs/common';
import { REDIS_LOCK_METRICS_OPTIONS } from './redis-lock-metrics.constants.js';
import { RedisLockMetrics } from './redis-lock-metrics.js';
import type { RedisLockMetricsOptions } from './redis-lock-metrics-options.interface.js';

/**
 * Prometheus metrics for locks and delayed jobs, with `prom-client` (an optional peer dependency:
 * nothing loads it unless this module is imported). Needs `RedisLockModule` registered with
 * `isGlobal: true` (it injects its `RedisLockEvents` and `DelayQueueService`).
 *
 * @example
 * \@Module({
 *   imports: [
 *     RedisLockModule.forRoot({ redis: process.env.REDIS_URL, isGlobal: true }),
 *     RedisLockMetricsModule.forRoot({ topics: ['order.expire'] }),
 *   ],
 * })
 * export class AppModule {}
 * // then serve `await app.get(RedisLockMetrics).registry.metrics()` on GET /metrics
 */
@Module({})
export class RedisLockMetricsModule {
  static forRoot(options: RedisLockMetricsOptions = {}): DynamicModule {
    return {
      module: RedisLockMetricsModule,
      providers: [{ provide: REDIS_LOCK_METRICS_OPTIONS, useValue: options }, RedisLockMetrics],
      exports: [RedisLockMetrics],
    };
  }
}
