import { Inject, Injectable, Logger } from '@nestjs/common';
import { DelayQueueClosedError } from '../core/errors/delay-queue-closed.error.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import { AfterCommitWriter } from './writer/after-commit-writer.js';
import { JobWriter, type JobWritten } from './writer/job-writer.js';
import { newOperationId } from './jobs/operation-record.js';
import type { PreparedJob } from './jobs/prepare-job.js';

/** Shortest time shutdown keeps trying to write committed jobs, even with `shutdownTimeout: 0`. */
const AFTER_COMMIT_FLUSH_MIN_MS = 1_000;

/**
 * The transactional outbox as the enqueuer sees it: a place that takes jobs inside the caller's
 * transaction and sees them to Redis once it commits. Bound to the outbox relay of
 * `delayQueue.outbox`, or null without one.
 */
export interface TransactionalOutbox {
  insert(topic: string, jobs: readonly PreparedJob[]): Promise<void>;
  /** Throws when the store sees a transaction the transaction port does not (see `JobOutboxRelay`). */
  refuseUnseenTransaction(): void;
}

/** The injection token of the enqueuer's `TransactionalOutbox` (its value may be null). */
export const TransactionalOutbox = Symbol.for('nestjs-redis-lock:TransactionalOutbox');

/**
 * Where a scheduled job goes: outside a transaction to Redis at once; inside one, into the outbox
 * in that transaction (with `delayQueue.outbox`), or to Redis once it has committed (the
 * `AfterCommitWriter`, dropped on rollback). Every path writes through the one `JobWriter`. Closed
 * by the `DelayQueueOrchestrator`; once closed, it refuses new jobs.
 */
@Injectable()
export class JobEnqueuer {
  private closed = false;
  /** Jobs of committed transactions on their way to Redis (retried until written). */
  private readonly afterCommit: AfterCommitWriter;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    connection: RedisConnection,
    @Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer,
    events: RedisLockEvents,
    private readonly writer: JobWriter,
    @Inject(TransactionalOutbox) private readonly outbox: TransactionalOutbox | null,
  ) {
    this.afterCommit = new AfterCommitWriter(writer, events, new Logger('DelayQueue'), connection.outages);
  }

  /** Jobs of committed transactions not yet confirmed written to Redis. */
  get pendingAfterCommit(): number {
    return this.afterCommit.pendingJobs;
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
  async enqueue(topic: string, jobs: readonly PreparedJob[], exactOutcome = false): Promise<readonly JobWritten[] | 'deferred'> {
    if (!this.transactions.isActive()) {
      this.outbox?.refuseUnseenTransaction();
      // A replace or a dedupe run twice (a re-sent command) must not act again: it gets an operation
      // record. Run twice, a debounce would restart the wait with this call's payload over a later
      // call's, and a throttle whose key expired meanwhile would create a second job.
      const recorded = exactOutcome || jobs.some((job) => job.replace || job.dedupe !== undefined);
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
   * Flushes the writes of committed transactions still pending, trying until
   * `delayQueue.shutdownTimeout` (at least 1 s).
   */
  async flush(): Promise<void> {
    await this.afterCommit.flush(Math.max(AFTER_COMMIT_FLUSH_MIN_MS, this.config.delayQueue.shutdownTimeout));
  }

  /** Refuses further jobs; what is still pending after the commit is reported lost. */
  close(): void {
    this.closed = true;
    this.afterCommit.close();
  }
}
