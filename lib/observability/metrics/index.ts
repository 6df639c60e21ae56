/**
 * `nestjs-redis-lock/metrics`: Prometheus metrics (prom-client) of locks and delayed jobs.
 * A separate entry point so that prom-client is loaded only by apps that use it.
 *
 * @module nestjs-redis-lock/metrics
 */
export { RedisLockMetricsModule } from './redis-lock-metrics.module.js';
export { RedisLockMetrics } from './redis-lock-metrics.js';
export type { RedisLockMetricsOptions } from './redis-lock-metrics-options.interface.js';
export { defaultLockKeyPattern, type LockKeyClassifier } from './key-pattern.js';
