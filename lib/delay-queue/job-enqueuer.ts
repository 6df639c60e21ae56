import { errorMessage } from '../core/errors/error-message.js';
import { settleWithin } from '../core/time/settle-within.js';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DelayQueueClosedError } from '../core/errors/delay-queue-closed.error.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import { AfterCommitWriter } from './writer/after-commit-writer.js';
import { JobWriter, type WriteOutcome } from './writer/job-writer.js';
import { newOperationId } from './jobs/operation-record.js';
import type { PreparedJob } from './jobs/prepare-job.js';
import { TopicShards } from './jobs/topic-shards.js';
import { JobOutboxRelay } from './outbox-relay/job-outbox-relay.js';
import type { OutboxRelayStats } from './outbox-relay/outbox-relay-stats.js';
import { OutboxJobWriter } from './outbox-relay/outbox-job-writer.js';
import type { RepeatDefinition } from './repeat/repeat-definition.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';

/** Shortest time shutdown keeps trying to write committed jobs, even with `shutdownTimeout: 0`. */
const AFTER_COMMIT_FLUSH_MIN_MS = 1_000;

/**
 * Where a scheduled job goes: outside a transaction to Redis at once; inside one, into the outbox
 * in that transaction (with `delayQueue.outbox`), or to Redis once it has committed (the
 * `AfterCommitWriter`, dropped on rollback). Every path writes through the one `JobWriter`. Started
 * and stopped by the `DelayQueueOrchestrator`; once closed, it refuses new jobs.
 */
/**
 * How long a removal outside a transaction waits for the outbox database to claim the schedule's
 * pending changes before it goes on without (see JobEnqueuer.removeSupersedingOutbox), in ms.
 */
const OUTBOX_CLAIM_WAIT_MS = 2_000;

@Injectable()
export class JobEnqueuer {
  private readonly logger = new Logger('DelayQueue');
  private closed = false;
  /** Jobs of committed transactions on their way to Redis (retried until written). */
  private readonly afterCommit: AfterCommitWriter;
  /** With `delayQueue.outbox`: jobs scheduled in transactions go through the outbox instead. */
  private readonly outbox?: JobOutboxRelay;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    connection: RedisConnection,
    @Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer,
    events: RedisLockEvents,
    shards: TopicShards,
    repeats: RepeatScheduler,
    private readonly writer: JobWriter,
  ) {
    this.afterCommit = new AfterCommitWriter(writer, events, this.logger, connection.outages);
    if (config.delayQueue.outbox) {
      this.outbox = new JobOutboxRelay(
        config.delayQueue.outbox,
        new OutboxJobWriter(() => connection.client, shards, repeats, writer),
        transactions,
        events,
        new Logger('DelayQueueOutbox'),
        (topic, rows) => writer.reportScheduled(topic, rows.map((row) => ({ ...row, id: row.jobId, kind: row.kind }))),
        connection.outages,
      );
    }
  }

  /** Counters of the transactional outbox, or undefined without one. */
  get outboxStats(): OutboxRelayStats | undefined {
    return this.outbox?.stats;
  }

  /** Jobs of committed transactions not yet confirmed written to Redis. */
  get pendingAfterCommit(): number {
    return this.afterCommit.pendingJobs;
  }

  /** Whether a repeat schedule change made now goes through the outbox (inside a transaction, with one). */
  get schedulesGoThroughOutbox(): boolean {
    return this.outbox !== undefined && this.transactions.isActive();
  }

  /** @throws DelayQueueClosedError once the delay queue has shut down */
  assertOpen(action: string): void {
    if (this.closed) throw new DelayQueueClosedError(action);
  }

  /**
   * Sends checked jobs on their way (see the class comment); resolves once they are written, to what
   * was done with each (in order), or handed over, to `'deferred'` (inside a transaction: known only
   * after the commit). `exactOutcome`: the caller is given the outcome, so the write carries an
   * operation record even without a replace, and a re-sent call answers as the first.
   */
  async enqueue(topic: string, jobs: readonly PreparedJob[], exactOutcome = false): Promise<readonly WriteOutcome[] | 'deferred'> {
    if (!this.transactions.isActive()) {
      // A replace run twice (a re-sent command) must not replace again: it gets an operation record.
      const recorded = exactOutcome || jobs.some((job) => job.replace);
      const outcomes = await this.writer.write(topic, jobs, recorded ? newOperationId() : undefined);
      this.writer.reportScheduled(topic, jobs, outcomes);
      return outcomes;
    }
    if (this.outbox) {
      await this.outbox.insert(topic, jobs);
      return 'deferred';
    }
    this.transactions.register({
      afterCompletion: async (status) => {
        if (status === 'committed') await this.afterCommit.write(topic, jobs);
      },
    });
    return 'deferred';
  }

  /**
   * Puts a repeat schedule's upsert (`definition`) or removal (`undefined`) into the outbox in the
   * current transaction; only when `schedulesGoThroughOutbox`.
   */
  async changeScheduleInOutbox(topic: string, id: string, definition: RepeatDefinition | undefined): Promise<void> {
    await this.outbox!.insertScheduleChange(topic, id, definition);
  }

  /**
   * Runs `remove`, a schedule removal outside a transaction, so that it supersedes the schedule's
   * changes still pending in the outbox (one left behind by a killed process would otherwise be
   * relayed again after Redis lost its data, and bring the schedule back): they are claimed first,
   * so no relay applies one meanwhile, deleted once the removal resolved, released when it
   * rejected. A database that has not answered the claim within OUTBOX_CLAIM_WAIT_MS is logged and
   * the removal goes on; rows its claim takes later are deleted or released the same way.
   */
  async removeSupersedingOutbox(topic: string, id: string, remove: () => Promise<boolean>): Promise<boolean> {
    if (!this.outbox) return remove();
    const outbox = this.outbox;
    const what = `removeRepeat(${JSON.stringify(topic)}, ${JSON.stringify(id)})`;
    const claim = outbox.claimScheduleChanges(topic, id);
    let settle: (removed: boolean) => void = () => undefined;
    const removed = new Promise<boolean>((resolve) => (settle = resolve));
    // Whenever the claim answers, its rows follow the removal's outcome.
    claim
      .then(async (rowIds) => ((await removed) ? outbox.deleteClaimed(rowIds) : outbox.releaseClaimed(rowIds)))
      .catch((error: unknown) =>
        this.logger.warn(`${what}: its pending outbox changes were not superseded (${errorMessage(error)}); a change left behind may bring the schedule back if Redis later loses its data.`),
      );
    await settleWithin(claim.catch(() => undefined), OUTBOX_CLAIM_WAIT_MS);
    try {
      const existed = await remove();
      settle(true);
      return existed;
    } catch (error) {
      settle(false);
      throw error;
    }
  }

  /** Checks that the outbox's database answers, if there is an outbox (see `JobOutboxRelay.prepare`). */
  async prepare(): Promise<void> {
    await this.outbox?.prepare();
  }

  /** Starts the outbox relay, if any. */
  async start(): Promise<void> {
    await this.outbox?.start();
  }

  /**
   * Flushes the writes of committed transactions still pending (trying until
   * `delayQueue.shutdownTimeout`, at least 1 s), then stops the outbox relay.
   */
  async flush(): Promise<void> {
    await this.afterCommit.flush(Math.max(AFTER_COMMIT_FLUSH_MIN_MS, this.config.delayQueue.shutdownTimeout));
    await this.outbox?.stop();
  }

  /** Refuses further jobs; what is still pending after the commit is reported lost. */
  close(): void {
    this.closed = true;
    this.afterCommit.close();
  }
}
