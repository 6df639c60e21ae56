import { Injectable } from '@nestjs/common';
import { JobContext } from 'nestjs-redis-lock';
import { Database } from '../database/database.js';

export type FulfilmentOutcome = 'reserved' | 'not-stocked';

/**
 * The `fulfilments` row of an order, written by the `order.fulfil` job and fenced with the token of
 * the delivery that writes it (`JobContext.current()`): a consumer that stalled past its visibility
 * timeout, and whose job another consumer has run since, finds its write refused.
 */
@Injectable()
export class FulfilmentsRepository {
  constructor(private readonly db: Database) {}

  /**
   * Records the running delivery's outcome unless a later delivery has written the row already;
   * false then (this delivery is stale: leave the row and the stock to it). Call it first in the
   * fulfilment's transaction: the row stays locked until COMMIT, so a newer delivery waits for it.
   */
  async record(orderId: string, outcome: FulfilmentOutcome): Promise<boolean> {
    const job = JobContext.current();
    if (!job) throw new Error('FulfilmentsRepository.record runs inside an order.fulfil handler only');
    const { rowCount } = await this.db.query(
      `INSERT INTO fulfilments (order_id, outcome, attempt, fence) VALUES ($1, $2, $3, $4)
       ON CONFLICT (order_id) DO UPDATE SET outcome = EXCLUDED.outcome, attempt = EXCLUDED.attempt,
         fulfilled_at = now(), fence = EXCLUDED.fence
       WHERE fulfilments.fence < EXCLUDED.fence`,
      [orderId, outcome, job.attempt, job.fencingToken],
    );
    return rowCount > 0;
  }
}
