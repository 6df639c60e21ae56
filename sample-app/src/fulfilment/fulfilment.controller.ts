import { Controller, Get, NotFoundException, Param } from '@nestjs/common';
import { DelayQueueService } from 'nestjs-redis-lock';
import { FULFIL_TOPIC, FULFILMENT_STEPS, fulfilmentGroup, stepJobId, type FulfilmentStep } from './fulfilment-steps.js';
import { FulfilmentStepsRepository, type StepRecord } from './fulfilment-steps.repository.js';

/** An order's fulfilment: per step, its job while it is queued, and its record once it ran. */
export interface FulfilmentView {
  readonly orderId: string;
  /** The job group of the order's steps. */
  readonly group: string;
  readonly steps: ReadonlyArray<{
    readonly step: FulfilmentStep;
    readonly jobId: string;
    /** The step's job while it waits (`due` includes waiting for its group's turn), runs or is dead; null when there is none. */
    readonly job: { readonly state: string; readonly attempts: number; readonly lastError?: string } | null;
    /** What the step did, once it ran; null before. */
    readonly done: StepRecord | null;
  }>;
}

@Controller('orders')
export class FulfilmentController {
  constructor(
    private readonly steps: FulfilmentStepsRepository,
    private readonly jobs: DelayQueueService,
  ) {}

  @Get(':id/fulfilment')
  async get(@Param('id') orderId: string): Promise<FulfilmentView> {
    if (!(await this.steps.orderExists(orderId))) throw new NotFoundException(`Order ${orderId} does not exist`);
    const records = await this.steps.list(orderId);
    const jobs = await Promise.all(FULFILMENT_STEPS.map((step) => this.jobs.get(FULFIL_TOPIC, stepJobId(orderId, step))));
    return {
      orderId,
      group: fulfilmentGroup(orderId),
      steps: FULFILMENT_STEPS.map((step, i) => {
        const job = jobs[i];
        return {
          step,
          jobId: stepJobId(orderId, step),
          job: job && { state: job.state, attempts: job.attempts, ...(job.lastError ? { lastError: job.lastError } : {}) },
          done: records.find((record) => record.step === step) ?? null,
        };
      }),
    };
  }
}
