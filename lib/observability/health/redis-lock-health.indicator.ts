import { Inject, Injectable, Optional } from '@nestjs/common';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { DelayQueueService } from '../../delay-queue/delay-queue.service.js';
import type { DelayQueueStats } from '../../delay-queue/interfaces/delayed-job.interface.js';
import { RedisConnection } from '../../core/redis/redis-connection.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

/**
 * Limits of one topic for `RedisLockHealthIndicator.checkQueues`; a limit left out is not checked.
 *
 * @inline
 */
export interface QueueHealthThresholds {
  /** Most due-but-unclaimed jobs (the backlog) before the topic counts as unhealthy. */
  maxDue?: number;
  /** Most dead letters before the topic counts as unhealthy. */
  maxDead?: number;
}

/**
 * `@nestjs/terminus` health indicator: Redis reachability (PING within a timeout) and per-topic
 * backlog and dead-letter counts against thresholds. Results are `up`/`down` with the numbers
 * attached, so `/health` shows why a check failed.
 *
 * @hideconstructor
 *
 * @example
 * \@Get('health') \@HealthCheck()
 * check() {
 *   return this.health.check([
 *     () => this.redisLock.pingCheck('redis', { timeout: 500 }),
 *     () => this.redisLock.checkQueues('queues', { 'order.expire': { maxDue: 1_000, maxDead: 0 } }),
 *   ]);
 * }
 */
@Injectable()
export class RedisLockHealthIndicator {
  /** @internal Nest builds it: inject the class instead (its parameters are the module's internal pieces). */
  constructor(
    private readonly indicators: HealthIndicatorService,
    // Optional only so that a RedisLockModule this module cannot see is reported by name (below).
    @Optional() @Inject(REDIS_LOCK_INTERNALS) internals: RedisLockInternals | undefined,
    @Optional() private readonly queue: DelayQueueService,
  ) {
    requireRedisLockModule('RedisLockHealthModule', { RedisConnection: internals?.connection, DelayQueueService: queue });
    this.connection = internals!.connection;
  }

  private readonly connection: RedisConnection;

  /** Up when Redis answers PING within `timeout` ms (default 1000); the round trip is reported as `latencyMs`. */
  async pingCheck<const Key extends string>(key: Key, options?: { timeout?: number }): Promise<HealthIndicatorResult<Key>> {
    const session = this.indicators.check(key);
    const timeout = options?.timeout ?? 1_000;
    const started = performance.now();
    try {
      await withTimeout(this.connection.client.ping(), timeout, `no PING reply within ${timeout} ms`);
      return session.up({ latencyMs: Math.round(performance.now() - started) });
    } catch (error) {
      return session.down({ message: errorMessage(error) });
    }
  }

  /**
   * Up when every topic's `due` backlog and `dead` count are within its thresholds; each topic's
   * counts are attached. Down too when the counts cannot be read within `timeout` ms (default 2000).
   */
  async checkQueues<const Key extends string>(
    key: Key,
    topics: Record<string, QueueHealthThresholds>,
    options?: { timeout?: number },
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.indicators.check(key);
    const timeout = options?.timeout ?? 2_000;
    const names = Object.keys(topics);
    let stats: DelayQueueStats[];
    try {
      stats = await withTimeout(
        Promise.all(names.map((topic) => this.queue.stats(topic))),
        timeout,
        `queue counts not read within ${timeout} ms`,
      );
    } catch (error) {
      return session.down({ message: errorMessage(error) });
    }
    const details: Record<string, DelayQueueStats & { problems?: string[] }> = {};
    let healthy = true;
    names.forEach((topic, i) => {
      const { maxDue, maxDead } = topics[topic];
      const counts = stats[i];
      const problems: string[] = [];
      if (maxDue !== undefined && counts.due > maxDue) problems.push(`due ${counts.due} > ${maxDue}`);
      if (maxDead !== undefined && counts.dead > maxDead) problems.push(`dead ${counts.dead} > ${maxDead}`);
      details[topic] = problems.length > 0 ? { ...counts, problems } : { ...counts };
      if (problems.length > 0) healthy = false;
    });
    return healthy ? session.up({ topics: details }) : session.down({ topics: details });
  }
}

/** Rejects after `ms` unless `promise` settles first; the loser's late rejection is swallowed, never unhandled. */
function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
