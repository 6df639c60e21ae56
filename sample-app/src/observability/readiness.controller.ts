import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RedisLockHealthIndicator } from 'nestjs-redis-lock/health';

/**
 * GET /health/ready: the library's terminus checks (200 when up, 503 with details when not):
 * Redis answers PING within 500 ms, and the order-expiry topic has no large backlog or dead letters.
 */
@Controller('health/ready')
export class ReadinessController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redisLock: RedisLockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.redisLock.pingCheck('redis', { timeout: 500 }),
      () => this.redisLock.checkQueues('queues', { 'order.expire': { maxDue: 1_000, maxDead: 100 } }),
    ]);
  }
}
