import type { Logger } from '@nestjs/common';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { JOB_LOG_MAX_LINE_LENGTH, JOB_LOG_MAX_LINES } from '../jobs/delay-queue.constants.js';
import { operationKey } from '../jobs/operation-record.js';
import { cutAtCharacter } from '../jobs/cut-text.js';
import { appendJobLogsScript } from '../scripts/append-job-logs.lua.js';
import type { HeldJob } from './held-job.js';

/** What job logs need from their consumer. */
interface JobLogsContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  /** The topic shard's keys. */
  readonly keys: TopicKeys;
  readonly logger: Logger;
  /** Where `job.log.dropped` goes (absent: nowhere). */
  readonly events?: RedisLockEvents;
}

/** One delivery's log lines on their way to Redis. */
interface DeliveryLog {
  /** Lines logged and not yet sent, oldest first (at most JOB_LOG_MAX_LINES: older ones would be trimmed anyway). */
  pending: string[];
  /** The sequence number of the last batch sent (the script appends a batch once, see append-job-logs.lua.ts). */
  sequence: number;
  /** The batch in flight (or the turn's wait before it); settles, never rejects. */
  sending?: Promise<void>;
  /** The claim is no longer this delivery's (the script said so): later lines are dropped. */
  closed: boolean;
}

/**
 * Writes `JobContext.log(message)` for the deliveries of one consumer. `log()` only queues the line:
 * the lines one delivery logs in one turn of the event loop go to Redis in one script call, fenced by
 * the delivery's claim token (a delivery that lost its job appends nothing), one batch at a time so
 * they keep their order. The runner awaits `flushed(job)` before it settles the job, so a job's log
 * is complete when its acknowledgement or failure is recorded. A batch Redis does not take (an outage,
 * a timeout) is dropped, reported by `job.log.dropped` (and a debug log): a log line never fails nor
 * delays its handler.
 */
export class JobLogs {
  private readonly logs = new WeakMap<HeldJob, DeliveryLog>();

  constructor(private readonly context: JobLogsContext) {}

  /** Queues one line of `job`'s log. @throws InvalidJobError (synchronously) when `message` is not a string */
  append(job: HeldJob, message: unknown): void {
    if (typeof message !== 'string') {
      throw new InvalidJobError(this.context.topic, 'log message', `must be a string, got ${message === null ? 'null' : typeof message}`);
    }
    let log = this.logs.get(job);
    if (!log) this.logs.set(job, (log = { pending: [], sequence: 0, closed: false }));
    if (log.closed) return;
    log.pending.push(cutAtCharacter(message, JOB_LOG_MAX_LINE_LENGTH));
    if (log.pending.length > JOB_LOG_MAX_LINES) log.pending.splice(0, log.pending.length - JOB_LOG_MAX_LINES);
    log.sending ??= this.sendNextTurn(job, log);
  }

  /** Settles once every line `job` logged so far was sent (or dropped); at once for a job that logged nothing. */
  flushed(job: HeldJob): Promise<void> | undefined {
    return this.logs.get(job)?.sending;
  }

  /** Sends the pending lines after this turn of the event loop, then any logged meanwhile. Never rejects. */
  private async sendNextTurn(job: HeldJob, log: DeliveryLog): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (log.pending.length > 0 && !log.closed) {
      const lines = log.pending;
      log.pending = [];
      await this.send(job, log, lines);
    }
    log.pending = [];
    log.sending = undefined;
  }

  private async send(job: HeldJob, log: DeliveryLog, lines: string[]): Promise<void> {
    const { topic, connection, keys, logger, events } = this.context;
    const sequence = ++log.sequence;
    const record = operationKey(keys.jobs, `${job.token}:log`);
    const args = { id: job.id, token: job.token, sequence, maxLines: JOB_LOG_MAX_LINES };
    try {
      const outcome = await appendJobLogsScript.call(
        connection,
        { ...keys, record },
        args,
        lines.map((line) => ({ line })),
      );
      if (outcome !== 'held') log.closed = true;
    } catch (error) {
      logger.debug(`Dropped ${lines.length} log line(s) of job ${job.id} on topic ${topic}: ${errorMessage(error)}`);
      if (events?.wants('job.log.dropped')) events.emit('job.log.dropped', { topic, id: job.id, lines: lines.length, error });
    }
  }
}
