import type { ScheduleOptions } from 'nestjs-redis-lock';

/** The steps of an order's fulfilment, in the order they must run. */
export const FULFILMENT_STEPS = ['reserve', 'ship', 'notify'] as const;

export type FulfilmentStep = (typeof FULFILMENT_STEPS)[number];

/** Payload of an `order.fulfil` job: one step of a paid order's fulfilment. */
export interface OrderFulfilment {
  readonly orderId: string;
  readonly item: string;
  readonly step: FulfilmentStep;
}

export const FULFIL_TOPIC = 'order.fulfil';

/** One job of `scheduleMany`. */
export type StepJob = ScheduleOptions & { readonly payload: OrderFulfilment };

/** Attempts and backoff of every step: about 1.5 s of retries, then the dead letters. */
export const FULFIL_JOB_OPTIONS = { maxAttempts: 3, backoff: { delay: 500, factor: 2, jitter: 0 } } as const;

/** The job group of an order's steps: they start one at a time, in schedule order, on any instance. */
export function fulfilmentGroup(orderId: string): string {
  return `order:${orderId}`;
}

/** A step's job id: deterministic, so a replayed request (or a step scheduling it again) schedules it once. */
export function stepJobId(orderId: string, step: FulfilmentStep): string {
  return `fulfil:${orderId}:${step}`;
}

/** The job of one step, in the order's group. */
export function stepJob(orderId: string, item: string, step: FulfilmentStep): StepJob {
  return { payload: { orderId, item, step }, id: stepJobId(orderId, step), group: fulfilmentGroup(orderId), ...FULFIL_JOB_OPTIONS };
}

/** Every step's job, in step order (jobs due together start in array order within their group). */
export function fulfilmentJobs(orderId: string, item: string): StepJob[] {
  return FULFILMENT_STEPS.map((step) => stepJob(orderId, item, step));
}

/** Logged (as a warning) by a step that runs while the step before it has not succeeded. */
export const STEP_BEFORE_NOT_DONE = 'has not succeeded; nothing to do until it does';

export function stepBefore(step: FulfilmentStep): FulfilmentStep | undefined {
  return FULFILMENT_STEPS[FULFILMENT_STEPS.indexOf(step) - 1];
}

export function stepAfter(step: FulfilmentStep): FulfilmentStep | undefined {
  return FULFILMENT_STEPS[FULFILMENT_STEPS.indexOf(step) + 1];
}
