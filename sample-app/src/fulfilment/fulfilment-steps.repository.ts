import { Injectable } from '@nestjs/common';
import { JobContext } from 'nestjs-redis-lock';
import { Database } from '../database/database.js';
import { FULFILMENT_STEPS, type FulfilmentStep } from './fulfilment-steps.js';

/** What a step did: `reserved` / `not-stocked` (an item the inventory does not track), `shipped`, `notified`. */
export type StepOutcome = 'reserved' | 'not-stocked' | 'shipped' | 'notified';

/** A step that ran, as `GET /orders/:id/fulfilment` returns it. Times are the database's clock. */
export interface StepRecord {
  readonly step: FulfilmentStep;
  readonly outcome: StepOutcome;
  /** The instance whose handler ran it (`INSTANCE_ID`). */
  readonly instance: string;
  readonly attempt: number;
  /** The fencing token of the delivery that wrote the row. */
  readonly fence: string;
  readonly startedAt: string;
  readonly finishedAt: string;
}

interface StepRow {
  step: FulfilmentStep;
  outcome: StepOutcome;
  instance: string;
  attempt: number;
  fence: string;
  started_at: Date;
  finished_at: Date;
}

/**
 * The `fulfilment_steps` rows of an order, one per step, each written by its `order.fulfil` job
 * and fenced with the token of the delivery that writes it (`JobContext.current()`): a consumer
 * that stalled past its visibility timeout, and whose job another consumer has run since, finds
 * its write refused.
 */
@Injectable()
export class FulfilmentStepsRepository {
  constructor(private readonly db: Database) {}

  /** The database's clock: a step's start and end are both read from it, whichever instance runs it. */
  async now(): Promise<Date> {
    const { rows } = await this.db.query<{ now: Date }>(`SELECT clock_timestamp() AS now`);
    return new Date(rows[0].now);
  }

  /**
   * Records the running delivery's step unless a later delivery has written the row already;
   * false then (this delivery is stale: leave the row and the stock to it). Call it first in the
   * step's transaction: the row stays locked until COMMIT, so a newer delivery waits for it.
   */
  async record(orderId: string, step: FulfilmentStep, outcome: StepOutcome, instance: string, startedAt: Date): Promise<boolean> {
    const job = JobContext.current();
    if (!job) throw new Error('FulfilmentStepsRepository.record runs inside an order.fulfil handler only');
    const { rowCount } = await this.db.query(
      `INSERT INTO fulfilment_steps (order_id, step, outcome, instance, attempt, started_at, fence)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (order_id, step) DO UPDATE SET outcome = EXCLUDED.outcome, instance = EXCLUDED.instance,
         attempt = EXCLUDED.attempt, started_at = EXCLUDED.started_at, finished_at = clock_timestamp(), fence = EXCLUDED.fence
       WHERE fulfilment_steps.fence < EXCLUDED.fence`,
      [orderId, step, outcome, instance, job.attempt, startedAt, job.fencingToken],
    );
    return rowCount > 0;
  }

  async orderExists(orderId: string): Promise<boolean> {
    const { rows } = await this.db.query(`SELECT 1 FROM orders WHERE id = $1`, [orderId]);
    return rows.length > 0;
  }

  async isDone(orderId: string, step: FulfilmentStep): Promise<boolean> {
    const { rows } = await this.db.query(`SELECT 1 FROM fulfilment_steps WHERE order_id = $1 AND step = $2`, [orderId, step]);
    return rows.length > 0;
  }

  /** The order's recorded steps, in step order. */
  async list(orderId: string): Promise<StepRecord[]> {
    const { rows } = await this.db.query<StepRow>(
      `SELECT step, outcome, instance, attempt, fence::text AS fence, started_at, finished_at FROM fulfilment_steps WHERE order_id = $1`,
      [orderId],
    );
    return rows
      .sort((a, b) => FULFILMENT_STEPS.indexOf(a.step) - FULFILMENT_STEPS.indexOf(b.step))
      .map((row) => ({
        step: row.step,
        outcome: row.outcome,
        instance: row.instance,
        attempt: Number(row.attempt),
        fence: row.fence,
        startedAt: new Date(row.started_at).toISOString(),
        finishedAt: new Date(row.finished_at).toISOString(),
      }));
  }
}
