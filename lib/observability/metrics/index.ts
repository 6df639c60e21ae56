// `nestjs-redis-lock/metrics`: a separate entry point so that prom-client is loaded only by apps that use it.
export { RedisLockMetricsModule } from './redis-lock-metrics.module.js';
export { RedisLockMetrics } from './redis-lock-metrics.js';
export type { RedisLockMetricsOptions } from './redis-lock-metrics-options.interface.js';
export { defaultLockKeyPattern, type LockKeyClassifier } from './key-pattern.js';
