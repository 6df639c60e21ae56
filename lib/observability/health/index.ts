// `nestjs-redis-lock/health`: a separate entry point so that @nestjs/terminus is loaded only by apps that use it.
export { RedisLockHealthModule } from './redis-lock-health.module.js';
export { RedisLockHealthIndicator, type QueueHealthThresholds } from './redis-lock-health.indicator.js';
