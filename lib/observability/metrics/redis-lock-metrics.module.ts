import { Module, type DynamicModule } from '@nestjs/common';
import { REDIS_LOCK_METRICS_OPTIONS } from './redis-lock-metrics.constants.js';
import { RedisLockMetrics } from './redis-lock-metrics.js';
import type { RedisLockMetricsOptions } from './redis-lock-metrics-options.interface.js';
import { keysOf, refuseUnknownKeys } from '../../core/options/known-option-keys.js';
import { optionValidator as validate, refuseAsInvalidOption } from '../../core/options/option-validation.js';
import { DEFAULT_MAX_TOPICS } from './redis-lock-metrics.constants.js';

/** The keys `RedisLockMetricsOptions` accepts; a misspelt one is refused, not ignored. */
const METRICS_OPTION_KEYS = keysOf<RedisLockMetricsOptions>()([
  'registry',
  'prefix',
  'keyPattern',
  'maxKeyPatterns',
  'topics',
  'maxTopics',
  'statsTimeout',
  'buckets',
]);

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
  /**
   * Provides `RedisLockMetrics`, which registers the metrics in `options.registry` (default: prom-client's
   * global registry) at module init and updates them from the module's events.
   *
   * @throws InvalidOptionsError for an option key it does not know (`metrics.<key>`), with the key probably meant,
   *   or a `maxTopics`/`maxKeyPatterns` out of range, or more `topics` than `maxTopics`
   */
  static forRoot(options: RedisLockMetricsOptions = {}): DynamicModule {
    refuseUnknownKeys(refuseAsInvalidOption, 'metrics', options, METRICS_OPTION_KEYS);
    validate.wholeNumber('metrics.maxKeyPatterns', options.maxKeyPatterns, { min: 1, max: 10_000, default: 100 });
    const maxTopics = validate.wholeNumber('metrics.maxTopics', options.maxTopics, { min: 1, max: 10_000, default: DEFAULT_MAX_TOPICS });
    if (options.topics !== undefined && (!Array.isArray(options.topics) || options.topics.some((t) => typeof t !== 'string'))) {
      validate.refuseValue('metrics.topics', options.topics, 'pass an array of topic names');
    }
    if ((options.topics?.length ?? 0) > maxTopics) {
      validate.refuse(
        'metrics.topics',
        `lists ${options.topics!.length} topics, more than maxTopics (${maxTopics}); raise maxTopics or list fewer topics`,
      );
    }
    return {
      module: RedisLockMetricsModule,
      providers: [{ provide: REDIS_LOCK_METRICS_OPTIONS, useValue: options }, RedisLockMetrics],
      exports: [RedisLockMetrics],
    };
  }
}
