import { Controller, Get, HttpStatus, Inject, Logger, Res, type OnApplicationShutdown } from '@nestjs/common';
import type { Response } from 'express';
import { Redis } from 'ioredis';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample-config.js';
import { Database } from '../database/database.js';

interface Check {
  status: 'up' | 'down';
  latencyMs?: number;
  error?: 'unreachable';
  kind?: string;
}

/**
 * GET /health: 200 when Redis and the database answer, 503 otherwise. A public endpoint: a check
 * that fails answers 'unreachable' only, and its cause (which names the server's address) is logged.
 */
@Controller('health')
export class HealthController implements OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly logger = new Logger('HealthController');

  constructor(
    private readonly db: Database,
    @Inject(SAMPLE_CONFIG) config: SampleConfig,
  ) {
    this.redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    this.redis.on('error', () => undefined); // reported by the check itself
  }

  @Get()
  async health(@Res({ passthrough: true }) res: Response) {
    const [redis, database] = await Promise.all([
      this.check('redis', () => this.redis.ping()),
      this.check('database', () => this.db.ping()),
    ]);
    database.kind = this.db.kind;
    const ok = redis.status === 'up' && database.status === 'up';
    res.status(ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return { status: ok ? 'ok' : 'degraded', redis, database };
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }

  private async check(name: string, probe: () => Promise<unknown>): Promise<Check> {
    const started = performance.now();
    try {
      await probe();
      return { status: 'up', latencyMs: Math.round((performance.now() - started) * 10) / 10 };
    } catch (error) {
      this.logger.warn(`${name} is down: ${(error as Error).message}`);
      return { status: 'down', error: 'unreachable' };
    }
  }
}
