import { Injectable, Logger, NotFoundException } from '@nestjs/common';
import { OnDelayed, type JobContext } from 'nestjs-redis-lock';
import { InventoryService } from '../inventory/inventory.service.js';

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
 */
@Injectable()
export class FulfilmentService {
  private readonly logger = new Logger(FulfilmentService.name);

  constructor(private readonly inventory: InventoryService) {}

  @OnDelayed('order.fulfil')
  async fulfil({ orderId, item }: OrderFulfilment, job: JobContext): Promise<void> {
    try {
      await this.inventory.reserveForOrder(item, orderId);
      this.logger.log(`order.fulfil ${orderId}: reserved one ${item} (attempt ${job.attempt})`);
    } catch (error) {
      if (!(error instanceof NotFoundException)) throw error; // sold out: retried, then a dead letter
      this.logger.log(`order.fulfil ${orderId}: ${item} is not a stocked item, nothing to reserve`);
    }
  }
}
