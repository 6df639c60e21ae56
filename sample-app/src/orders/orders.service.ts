import { randomUUID } from 'node:crypto';
import { ConflictException, Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { DelayQueueService, LockContext, OnDelayed, WithLock, type JobContext } from 'nestjs-redis-lock';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample-config.js';
import { Database } from '../database/database.js';
import { FULFIL_TOPIC, fulfilmentJobs } from '../fulfilment/fulfilment-steps.js';
import type { Order } from './order.js';
import { OrdersRepository } from './orders.repository.js';

/** Payload of the `order.expire` delayed job. */
export interface OrderExpiry {
  readonly orderId: string;
}

@Injectable()
export class OrdersService {
  private readonly logger = new Logger(OrdersService.name);

  constructor(
    private readonly db: Database,
    private readonly orders: OrdersRepository,
    private readonly jobs: DelayQueueService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /**
   * Creates an order and schedules its expiry, in one transaction: the job is enqueued only if
   * the order row commits, and its id is the order id, so a retried request cannot schedule twice.
   * The job goes through the outbox (app.module.ts): its row commits with the order's, so it runs
   * even if this process dies right after COMMIT or Redis is down then.
   */
  create(item: string): Promise<Order> {
    const id = randomUUID();
    return this.db.transaction(async () => {
      await this.orders.insert(id, item, this.config.orderExpiryMs);
      await this.jobs.schedule<OrderExpiry>('order.expire', { orderId: id }, { delay: this.config.orderExpiryMs, id });
      return (await this.orders.find(id))!;
    });
  }

  async get(id: string): Promise<Order> {
    const order = await this.orders.find(id);
    if (!order) throw new NotFoundException(`Order ${id} does not exist`);
    return order;
  }

  /**
   * Pays an order: the transaction is outside, the lock inside, so the lock is let go after COMMIT.
   * Paying schedules the order's fulfilment: one `order.fulfil` job per step (reserve, ship, notify)
   * in the order's group `order:<id>`, so they run one at a time and in order (see FulfilmentService).
   */
  pay(id: string): Promise<Order> {
    return this.db.transaction(() => this.payUnderLock(id));
  }

  @WithLock('order:<0>', { waitTimeout: 10_000 })
  async payUnderLock(id: string): Promise<Order> {
    const order = await this.get(id);
    if (order.status !== 'pending') throw new ConflictException(`Order ${id} is already ${order.status}`);
    const { fencingToken } = LockContext.current()!;
    if (!(await this.orders.markPaid(id, fencingToken))) {
      throw new ConflictException(`Order ${id} changed while it was being paid`);
    }
    // Enqueued only if the payment commits (through the outbox, group included); the ids
    // `fulfil:<id>:<step>` make a replayed request schedule them once.
    await this.jobs.scheduleMany(FULFIL_TOPIC, fulfilmentJobs(id, order.item));
    return (await this.orders.find(id))!;
  }

  /** Runs once per order, `orderExpiryMs` after creation, on whichever instance claims the job. */
  @OnDelayed('order.expire')
  async expire(payload: OrderExpiry, job: JobContext): Promise<void> {
    const expired = await this.db.transaction(() => this.expireUnderLock(payload.orderId));
    this.logger.log(`order.expire ${payload.orderId} (attempt ${job.attempt}): ${expired ? 'expired' : 'already settled'}`);
  }

  /** Idempotent: an order that was paid, or expired by an earlier delivery, is left as it is. */
  @WithLock('order:<0>', { waitTimeout: 10_000 })
  async expireUnderLock(id: string): Promise<boolean> {
    const { fencingToken } = LockContext.current()!;
    return this.orders.markExpired(id, fencingToken);
  }
}
