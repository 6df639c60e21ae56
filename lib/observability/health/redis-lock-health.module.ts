import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisLockHealthIndicator } from './redis-lock-health.indicator.js';

/**
 * Provides `RedisLockHealthIndicator` (with `@nestjs/terminus`, an optional peer dependency loaded
 * only through this entry point). Needs `RedisLockModule` registered with `isGlobal: true`.
 *
 * @example
 * \@Module({ imports: [RedisLockHealthModule], controllers: [HealthController] })
 * export class HealthModule {}
 */
@Module({
  imports: [TerminusModule],
  providers: [RedisLockHealthIndicator],
  exports: [RedisLockHealthIndicator, TerminusModule],
})
export class RedisLockHealthModule {}
