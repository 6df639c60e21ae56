import { Controller, Get, Header } from '@nestjs/common';
import { RedisLockMetrics } from 'nestjs-redis-lock/metrics';

/** GET /metrics: Prometheus text format (lock and job metrics, queue depths read on each scrape). */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: RedisLockMetrics) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
