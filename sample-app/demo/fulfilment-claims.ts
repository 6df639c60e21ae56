/**
 * The claims the demo and test/sample-app/fulfilment.e2e.spec.ts check about the fulfilment steps
 * of orders (one job group per order), from the steps' records (GET /orders/:id/fulfilment; times on
 * the database's clock). Pure functions: they order and compare records, they never time anything.
 */
import type { FulfilmentView } from '../src/fulfilment/fulfilment.controller.js';
import { FULFILMENT_STEPS, STEP_BEFORE_NOT_DONE, type FulfilmentStep } from '../src/fulfilment/fulfilment-steps.js';

/** A step that ran: where, and from when to when (epoch ms). */
export interface RanStep {
  readonly step: FulfilmentStep;
  readonly instance: string;
  readonly start: number;
  readonly end: number;
}

/** An order's steps that ran, in the order they started. */
export interface OrderSteps {
  readonly orderId: string;
  /** The instance the order was paid on. */
  readonly paidOn: string;
  readonly steps: readonly RanStep[];
}

export function orderSteps(view: FulfilmentView, paidOn: string): OrderSteps {
  const steps = view.steps.flatMap(({ step, done }) =>
    done ? [{ step, instance: done.instance, start: Date.parse(done.startedAt), end: Date.parse(done.finishedAt) }] : [],
  );
  return { orderId: view.orderId, paidOn, steps: steps.sort((a, b) => a.start - b.start) };
}

/**
 * What breaks "the steps of an order ran one at a time, in order": a step that did not run, a step
 * that started before the one it follows, a step that started before the previous one ended.
 */
export function stepViolations(order: OrderSteps): string[] {
  const problems: string[] = [];
  const ran = order.steps.map((s) => s.step);
  const missing = FULFILMENT_STEPS.filter((step) => !ran.includes(step));
  if (missing.length > 0) problems.push(`${order.orderId}: ${missing.join(', ')} did not run`);
  if (ran.join() !== FULFILMENT_STEPS.filter((step) => ran.includes(step)).join()) {
    problems.push(`${order.orderId}: steps started in the order ${ran.join(' → ')}`);
  }
  order.steps.forEach((step, i) => {
    const previous = order.steps[i - 1];
    if (previous && step.start < previous.end) {
      problems.push(`${order.orderId}: ${step.step} started ${previous.end - step.start} ms before ${previous.step} ended`);
    }
  });
  return problems;
}

/** The most orders that had a step running at the same instant. */
export function mostOrdersAtOnce(orders: readonly OrderSteps[]): number {
  const all = orders.flatMap((order) => order.steps.map((step) => ({ ...step, orderId: order.orderId })));
  let most = 0;
  for (const { start } of all) {
    const running = new Set(all.filter((step) => step.start <= start && start < step.end).map((step) => step.orderId));
    most = Math.max(most, running.size);
  }
  return most;
}

/**
 * The lines of an instance's output where a step ran while the step before it had not succeeded (it
 * then does nothing, and runs again once that step succeeds): with the steps in one group this
 * happens only after a step went to the dead letters.
 */
export function stepsRunTooEarly(output: string): string[] {
  return output.split('\n').filter((line) => line.includes(STEP_BEFORE_NOT_DONE));
}
