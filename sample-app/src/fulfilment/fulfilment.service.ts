import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { DelayQueueService, OnDelayed, type JobContext } from 'nestjs-redis-lock';
import { instanceIdOf, SAMPLE_CONFIG, type SampleConfig } from '../config/sample-config.js';
import { Database } from '../database/database.js';
import { InventoryService } from '../inventory/inventory.service.js';
import { FULFIL_TOPIC, STEP_BEFORE_NOT_DONE, stepAfter, stepBefore, stepJob, type OrderFulfilment } from './fulfilment-steps.js';
import { FulfilmentStepsRepository, type StepOutcome } from './fulfilment-steps.repository.js';

/** How long a step's work takes when the config does not say (it stands for the warehouse, the carrier, the mail service). */
export const DEFAULT_FULFILMENT_STEP_MS = 100;

/**
 * Runs the steps of a paid order's fulfilment: reserve the item, ship it, notify the customer. Each
 * step is an `order.fulfil` job of the order's group (`order:<id>`), so the steps of one order start
 * one at a time and in order, on whichever instance claims them, while other orders go on in parallel.
 *
 * When the item is sold out, `reserve` fails and is retried with backoff; its order's `ship` and
 * `notify` wait for it meanwhile (the group). After its last attempt it goes to the dead letters,
 * which frees the group: `ship` and `notify` then find no reservation and end without doing
 * anything. Once the item is restocked an operator retries `reserve` from the dashboard; when it
 * succeeds it schedules `ship` again (same id, same group), which schedules `notify` in turn.
 *
 * Each step writes its `fulfilment_steps` row first, fenced with its delivery's fencing token
 * (`job.fencingToken`, greater for every delivery), in the same transaction as its side effect: a
 * delivery that stalled past its visibility timeout while another one ran the step finds its write
 * refused and changes nothing.
 */
@Injectable()
export class FulfilmentService {
  private readonly logger = new Logger(FulfilmentService.name);
  private readonly instance: string;
  private readonly stepMs: number;

  constructor(
    private readonly db: Database,
    private readonly inventory: InventoryService,
    private readonly steps: FulfilmentStepsRepository,
    private readonly jobs: DelayQueueService,
    @Inject(SAMPLE_CONFIG) config: SampleConfig,
  ) {
    this.instance = instanceIdOf(config);
    this.stepMs = config.fulfilmentStepMs ?? DEFAULT_FULFILMENT_STEP_MS;
  }

  @OnDelayed(FULFIL_TOPIC)
  async fulfil({ orderId, item, step }: OrderFulfilment, job: JobContext): Promise<void> {
    const before = stepBefore(step);
    if (before && !(await this.steps.isDone(orderId, before))) {
      // Only when `before` went to the dead letters (which let its group go on): it schedules this step again once it succeeds.
      this.logger.warn(`order.fulfil ${step} ${orderId}: ${before} ${STEP_BEFORE_NOT_DONE}`);
      return;
    }
    const startedAt = await this.steps.now();
    await delay(this.stepMs, undefined, { signal: job.signal });
    const tracked = step === 'reserve' && (await this.isTracked(item));
    const outcome: StepOutcome = step === 'reserve' ? (tracked ? 'reserved' : 'not-stocked') : step === 'ship' ? 'shipped' : 'notified';
    const written = await this.db.transaction(async () => {
      if (!(await this.steps.record(orderId, step, outcome, this.instance, startedAt))) return false;
      // Sold out: throws, the row is rolled back with it, and the job is retried, then a dead letter.
      if (tracked) await this.inventory.reserveForOrder(item, orderId);
      return true;
    });
    if (!written) {
      this.logger.warn(
        `order.fulfil ${step} ${orderId}: a later delivery ran it already; this one (fence ${job.fencingToken}) changed nothing`,
      );
      return;
    }
    this.logger.log(`order.fulfil ${step} ${orderId}: ${outcome} (group ${job.group}, attempt ${job.attempt}, fence ${job.fencingToken})`);
    const after = stepAfter(step);
    // A no-op while the next step's job waits in the group (same id); a new job, behind this one,
    // when it already ran and found nothing to do (this step had gone to the dead letters).
    if (after) {
      const { payload, ...options } = stepJob(orderId, item, after);
      await this.jobs.schedule(FULFIL_TOPIC, payload, options);
    }
  }

  private isTracked(item: string): Promise<boolean> {
    return this.inventory.get(item).then(
      () => true,
      (error: unknown) => {
        if (error instanceof NotFoundException) return false;
        throw error;
      },
    );
  }
}
