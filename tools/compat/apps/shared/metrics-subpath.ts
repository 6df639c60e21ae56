/**
 * `nestjs-redis-lock/metrics` in an app that has prom-client: the module registered, a /metrics
 * route serving its registry, and the lock and job series looked for after the other checks ran.
 */
import { Controller, Get } from '@nestjs/common';
import { RedisLockMetrics, RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import type { MetricsProbe } from './app-flavor.js';
import { assert, assertEqual } from './check-list.js';
import { COMPAT_TOPIC } from './compat.module.js';

@Controller('compat')
export class CompatMetricsController {
  constructor(private readonly metrics: RedisLockMetrics) {}

  @Get('metrics')
  async scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}

export const prometheusMetrics: MetricsProbe = {
  label: 'prom-client',
  imports: [RedisLockMetricsModule.forRoot({ topics: [COMPAT_TOPIC] })],
  controllers: [CompatMetricsController],
  async verify(checks, base) {
    await checks.run('nestjs-redis-lock/metrics: Prometheus text with the lock and job series', async () => {
      const response = await fetch(`${base}/compat/metrics`);
      const text = await response.text();
      assertEqual(response.status, 200, 'GET /compat/metrics status');
      const series = (name: string) => text.split('\n').filter((line) => line.startsWith(`${name}{`));
      assert(
        series('redis_lock_lock_acquisitions_total').some((line) => line.includes('key_pattern="compat-order:<0>"')),
        `no redis_lock_lock_acquisitions_total for the @WithLock pattern in:\n${series('redis_lock_lock_acquisitions_total').join('\n')}`,
      );
      assert(
        series('redis_lock_jobs_total').some((line) => line.includes(`topic="${COMPAT_TOPIC}"`) && line.includes('outcome="succeeded"')),
        `no succeeded redis_lock_jobs_total for ${COMPAT_TOPIC} in:\n${series('redis_lock_jobs_total').join('\n')}`,
      );
    });
  },
};
