import type { Logger } from '@nestjs/common';
import { describeFailure } from './describe-failure.js';

/** A streak's failures are logged at most this often. */
const FAILURE_LOG_INTERVAL_MS = 30_000;

/**
 * The current run of failed Redis calls of one consumer: its first failure is logged (and then one
 * at most every 30 s), its end is logged once, and its length sets the retry delay. Every part of
 * the consumer reports into the same streak, so one outage gives one warning, not one per part.
 */
export class RedisFailureStreak {
  private failures = 0;
  private lastLog = -Infinity;

  constructor(
    private readonly topic: string,
    private readonly logger: Logger,
  ) {}

  failed(error: unknown): void {
    this.failures++;
    const now = performance.now();
    if (now - this.lastLog < FAILURE_LOG_INTERVAL_MS) return;
    this.lastLog = now;
    this.logger.warn(
      `Delay-queue consumer of topic ${JSON.stringify(this.topic)}: a Redis call failed, retrying with backoff ` +
        `(further failures are logged at most every 30 s): ${describeFailure(error)}`,
    );
  }

  /** A call succeeded: ends the streak (and says so, if there was one). */
  recovered(): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.lastLog = -Infinity;
    this.logger.log(`Delay-queue consumer of topic ${JSON.stringify(this.topic)} works with Redis again.`);
  }

  /** How long to wait before the next try: 100 ms doubling per failure up to 5 s, with 50-100 % jitter. */
  retryDelay(): number {
    const base = Math.min(5_000, 100 * 2 ** Math.min(10, Math.max(0, this.failures - 1)));
    return Math.round(base * (0.5 + Math.random() / 2));
  }
}
