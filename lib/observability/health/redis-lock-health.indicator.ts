import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { DelayQueueService } from '../../delay-queue/delay-queue.service.js';
import type { DelayQueueStats } from '../../delay-queue/interfaces/delayed-job.interface.js';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

/**
 * Limits of one topic for `RedisLockHealthIndicator.checkQueues`; a limit left out is not checked.
 */
export interface QueueHealthThresholds {
  /**
   * Most jobs consumers could start now and have not claimed (the backlog: `due`, plus one job of each
   * group whose turn has come, `readyGroups`) before the topic counts as unhealthy.
   */
  maxDue?: number;
  /** Most dead letters before the topic counts as unhealthy. */
  maxDead?: number;
}

/**
 * Options of one check of `RedisLockHealthIndicator`.
 */
export interface HealthCheckOptions {
  /** Longest wait for Redis, in ms. */
  timeout?: number;
  /**
   * Put the cause of a failure in the answer (`message`), e.g. `Redis at 10.0.0.5:6379 is
   * unreachable … ECONNREFUSED`. **Default false**: the answer says only what is down, in a stable
   * message, and the cause goes to the application log (once per distinct cause). Set it only on an
   * endpoint that is not public: the cause names Redis's address and port.
   */
  showCause?: boolean;
}

/** The answers of a failed check while `showCause` is off: stable, and naming nothing of the deployment. */
const GENERIC_REASON = {
  ping: 'Redis did not answer (the cause is in the application log)',
  queues: 'Queue counts could not be read (the cause is in the application log)',
} as const;

/**
 * `@nestjs/terminus` health indicator: Redis reachability (PING within a timeout) and per-topic
 * backlog and dead-letter counts against thresholds. Results are `up`/`down` with the numbers
 * attached, so `/health` shows why a check failed. When Redis cannot be reached, the answer carries
 * a stable generic `message` and the cause (which names Redis's address) is logged, unless the
 * check is called with `showCause: true`.
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
  private readonly logger = new Logger('RedisLockHealthIndicator');
  /** The kind of cause (error name and code) last logged per check key: a probe every few seconds logs an outage once, not every time. */
  private readonly loggedCauses = new Map<string, string>();

  /**
   * Up when Redis answers PING within `timeout` ms (default 1000); the round trip is reported as
   * `latencyMs`. Down: `message` is 'Redis did not answer (the cause is in the application log)',
   * or the cause itself with `showCause: true`.
   */
  async pingCheck<const Key extends string>(key: Key, options?: HealthCheckOptions): Promise<HealthIndicatorResult<Key>> {
    const session = this.indicators.check(key);
    const timeout = options?.timeout ?? 1_000;
    const started = performance.now();
    try {
      await withTimeout(this.connection.command('ping'), timeout, `no PING reply within ${timeout} ms`);
      this.loggedCauses.delete(key);
      return session.up({ latencyMs: Math.round(performance.now() - started) });
    } catch (error) {
      return session.down({ message: this.reasonOf(key, error, GENERIC_REASON.ping, options) });
    }
  }

  /**
   * Up when every topic's `due` backlog and `dead` count are within its thresholds; each topic's
   * counts are attached. Down too when the counts cannot be read within `timeout` ms (default 2000):
   * `message` is then 'Queue counts could not be read (the cause is in the application log)', or the
   * cause itself with `showCause: true`.
   */
  async checkQueues<const Key extends string>(
    key: Key,
    topics: Record<string, QueueHealthThresholds>,
    options?: HealthCheckOptions,
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
      return session.down({ message: this.reasonOf(key, error, GENERIC_REASON.queues, options) });
    }
    this.loggedCauses.delete(key);
    const details: Record<string, DelayQueueStats & { problems?: string[] }> = {};
    let healthy = true;
    names.forEach((topic, i) => {
      const { maxDue, maxDead } = topics[topic];
      const counts = stats[i];
      const problems: string[] = [];
      const backlog = counts.due + counts.readyGroups;
      if (maxDue !== undefined && backlog > maxDue) {
        problems.push(
          counts.readyGroups > 0 ? `due ${backlog} (${counts.readyGroups} of groups) > ${maxDue}` : `due ${backlog} > ${maxDue}`,
        );
      }
      if (maxDead !== undefined && counts.dead > maxDead) problems.push(`dead ${counts.dead} > ${maxDead}`);
      details[topic] = problems.length > 0 ? { ...counts, problems } : { ...counts };
      if (problems.length > 0) healthy = false;
    });
    return healthy ? session.up({ topics: details }) : session.down({ topics: details });
  }

  /** The `message` of a failed check: its cause with `showCause`, else `generic`; the cause is logged once per change. */
  private reasonOf(key: string, error: unknown, generic: string, options: HealthCheckOptions | undefined): string {
    const cause = errorMessage(error);
    const kind = `${(error as Error | undefined)?.name}:${(error as { code?: unknown } | undefined)?.code ?? ''}`;
    if (this.loggedCauses.get(key) !== kind) {
      this.loggedCauses.set(key, kind);
      this.logger.warn(`Health check "${key}" is down: ${cause}`);
    }
    return options?.showCause === true ? cause : generic;
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
