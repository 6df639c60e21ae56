import type { Logger } from '@nestjs/common';
import type { RedisOutageLog } from '../../core/redis/outage-log.js';
import { describeFailure } from './describe-failure.js';

/** A streak's failures are logged at most this often. */
const FAILURE_LOG_INTERVAL_MS = 30_000;

/**
 * The current run of failed Redis calls of one consumer: its length sets the retry delay. Every
 * part of the consumer reports into the same streak. A failure to reach Redis during a known outage
 * goes to the connection's outage log (counted, summarised when Redis is back); any other failure
 * is logged here: its first one (then one at most every 30 s), and the streak's end once, only
 * when a failure of it was logged.
 */
export class RedisFailureStreak {
  private failures = 0;
  private lastLog = -Infinity;
  /** Whether a failure of this streak was logged here (then its end is logged too). */
  private logged = false;

  constructor(
    private readonly topic: string,
    private readonly logger: Logger,
    private readonly outages?: RedisOutageLog,
  ) {}

  failed(error: unknown): void {
    this.failures++;
    if (this.outages?.absorb('consumer calls retried', error)) return;
    const now = performance.now();
    if (now - this.lastLog < FAILURE_LOG_INTERVAL_MS) return;
    this.lastLog = now;
    this.logged = true;
    this.logger.warn(
      `Delay-queue consumer of topic ${JSON.stringify(this.topic)}: a Redis call failed, retrying with backoff ` +
        `(further failures are logged at most every 30 s): ${describeFailure(error)}`,
    );
  }

  /** A call succeeded: ends the streak (and says so, if a failure of it was logged). */
  recovered(): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.lastLog = -Infinity;
    if (!this.logged) return;
    this.logged = false;
    this.logger.log(`Delay-queue consumer of topic ${JSON.stringify(this.topic)} works with Redis again.`);
  }

  /** How long to wait before the next try: 100 ms doubling per failure up to 5 s, with 50-100 % jitter. */
  retryDelay(): number {
    const base = Math.min(5_000, 100 * 2 ** Math.min(10, Math.max(0, this.failures - 1)));
    return Math.round(base * (0.5 + Math.random() / 2));
  }
}
