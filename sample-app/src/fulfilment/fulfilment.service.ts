import { Injectable, Logger, NotFoundException } from '@nestjs/common';
import { OnDelayed, type JobContext } from 'nestjs-redis-lock';
import { Database } from '../database/database.js';
import { InventoryService } from '../inventory/inventory.service.js';
import { FulfilmentsRepository, type FulfilmentOutcome } from './fulfilments.repository.js';

/** Payload of the `order.fulfil` delayed job, scheduled when an order is paid. */
export interface OrderFulfilment {
  readonly orderId: string;
  readonly item: string;
}

/** Attempts and backoff of `order.fulfil`: about 1.5 s of retries, then the dead letters. */
export const FULFIL_JOB_OPTIONS = { maxAttempts: 3, backoff: { delay: 500, factor: 2, jitter: 0 } } as const;

/**
 * Reserves a paid order's item from stock. When the item is sold out the job fails, is retried with
 * backoff and ends in the dead letters; once the item is restocked an operator retries it from the
 * dashboard (`/dashboard`). Items the inventory does not track need no reservation.
 *
 * Each run writes the order's `fulfilments` row first, fenced with its delivery's fencing token
 * (`job.fencingToken`, greater for every delivery), in the same transaction as the reservation: a
 * delivery that stalled past its visibility timeout while another one fulfilled the order finds
 * its write refused and changes nothing.
 */
@Injectable()
export class FulfilmentService {
  private readonly logger = new Logger(FulfilmentService.name);

  constructor(
    private readonly db: Database,
    private readonly inventory: InventoryService,
    private readonly fulfilments: FulfilmentsRepository,
  ) {}

  @OnDelayed('order.fulfil')
  async fulfil({ orderId, item }: OrderFulfilment, job: JobContext): Promise<void> {
    const tracked = await this.inventory.get(item).then(
      () => true,
      (error: unknown) => {
        if (error instanceof NotFoundException) return false;
        throw error;
      },
    );
    const outcome: FulfilmentOutcome = tracked ? 'reserved' : 'not-stocked';
    const written = await this.db.transaction(async () => {
      if (!(await this.fulfilments.record(orderId, outcome))) return false;
      // Sold out: throws, the row is rolled back with it, and the job is retried, then a dead letter.
      if (tracked) await this.inventory.reserveForOrder(item, orderId);
      return true;
    });
    if (!written) {
      this.logger.warn(`order.fulfil ${orderId}: a later delivery fulfilled it already; this one (fence ${job.fencingToken}) changed nothing`);
    } else if (tracked) {
      this.logger.log(`order.fulfil ${orderId}: reserved one ${item} (attempt ${job.attempt}, fence ${job.fencingToken})`);
    } else {
      this.logger.log(`order.fulfil ${orderId}: ${item} is not a stocked item, nothing to reserve`);
    }
  }
}
