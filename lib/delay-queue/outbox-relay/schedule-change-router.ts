import { Inject, Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import { settleWithin } from '../../core/time/settle-within.js';
import { TransactionSynchronizer } from '../../core/transaction/transaction-synchronizer.interface.js';
import type { RepeatInfo } from '../interfaces/repeat-options.interface.js';
import type { RepeatDefinition } from '../repeat/repeat-definition.js';
import { RepeatScheduler } from '../repeat/repeat-scheduler.js';
import { JobOutboxRelay } from './job-outbox-relay.js';
import { pendingRepeatInfo } from './pending-repeat-info.js';

/**
 * How long a removal outside a transaction waits for the outbox database to claim the schedule's
 * pending changes before it goes on without (see `ScheduleChangeRouter.removeSuperseding`), in ms.
 */
const OUTBOX_CLAIM_WAIT_MS = 2_000;

/**
 * Where a change of a repeat schedule goes, as `JobEnqueuer` decides for a job: inside a transaction
 * with `delayQueue.outbox`, into the outbox in that transaction (applied after COMMIT, never on
 * ROLLBACK); otherwise to Redis at once, a removal superseding the schedule's changes still pending
 * in the outbox.
 */
@Injectable()
export class ScheduleChangeRouter {
  private readonly logger = new Logger('DelayQueue');

  constructor(
    @Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer,
    private readonly repeats: RepeatScheduler,
    @Inject(JobOutboxRelay) private readonly outbox: JobOutboxRelay | null,
  ) {}

  /**
   * Stores `definition` (an upsert): resolves to the stored schedule and the tick queued now, or,
   * through the outbox, to what can be told before the commit (`pendingRepeatInfo`).
   */
  async upsert(topic: string, definition: RepeatDefinition): Promise<RepeatInfo> {
    const outbox = this.outboxOfTransaction();
    if (outbox) {
      await outbox.insertScheduleChange(topic, definition.id, definition);
      return pendingRepeatInfo(topic, definition);
    }
    return this.repeats.upsert(topic, definition);
  }

  /**
   * Removes schedule `id`: resolves whether it existed, or `true` at once through the outbox (known
   * only when the removal is applied).
   */
  async remove(topic: string, id: string): Promise<boolean> {
    const outbox = this.outboxOfTransaction();
    if (outbox) {
      await outbox.insertScheduleChange(topic, id, undefined);
      return true;
    }
    return this.removeSuperseding(topic, id, () => this.repeats.remove(topic, id));
  }

  /**
   * The outbox, when a schedule change made now goes through it (inside a transaction, with one).
   *
   * @throws OutboxTransactionMissingError when the outbox's store sees a transaction the port does not
   */
  private outboxOfTransaction(): JobOutboxRelay | null {
    if (this.outbox === null) return null;
    if (this.transactions.isActive()) return this.outbox;
    this.outbox.refuseUnseenTransaction();
    return null;
  }

  /**
   * Runs `remove`, a schedule removal outside a transaction, so that it supersedes the schedule's
   * changes still pending in the outbox (one left behind by a killed process would otherwise be
   * relayed again after Redis lost its data, and bring the schedule back): they are claimed first,
   * so no relay applies one meanwhile, deleted once the removal resolved, released when it
   * rejected. A database that has not answered the claim within OUTBOX_CLAIM_WAIT_MS is logged and
   * the removal goes on; rows its claim takes later are deleted or released the same way.
   */
  private async removeSuperseding(topic: string, id: string, remove: () => Promise<boolean>): Promise<boolean> {
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
        this.logger.warn(
          `${what}: its pending outbox changes were not superseded (${errorMessage(error)}); ` +
            'a change left behind may bring the schedule back if Redis later loses its data.',
        ),
      );
    await settleWithin(
      claim.catch(() => undefined),
      OUTBOX_CLAIM_WAIT_MS,
    );
    try {
      const existed = await remove();
      settle(true);
      return existed;
    } catch (error) {
      settle(false);
      throw error;
    }
  }
}
