/**
 * `nestjs-redis-lock/health`: a `@nestjs/terminus` health indicator for Redis and the delay queue.
 * A separate entry point so that `@nestjs/terminus` is loaded only by apps that use it.
 *
 * @module nestjs-redis-lock/health
 */
export { RedisLockHealthModule } from './redis-lock-health.module.js';
export { RedisLockHealthIndicator, type HealthCheckOptions, type QueueHealthThresholds } from './redis-lock-health.indicator.js';
