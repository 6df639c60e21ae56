// `nestjs-redis-lock/metrics`: a separate entry point so that prom-client is loaded only by apps that use it.
export { RedisLockMetricsModule } from './redis-lock-metrics.module';
export { RedisLockMetrics } from './redis-lock-metrics';
export type { RedisLockMetricsOptions } from './redis-lock-metrics-options.interface';
export { defaultLockKeyPattern, type LockKeyClassifier } from './key-pattern';
