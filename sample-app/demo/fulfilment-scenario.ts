/**
 * Orders paid across the instances of the sample service (one database, one Redis): each order's
 * fulfilment is three `order.fulfil` jobs (reserve → ship → notify) in the group `order:<id>`.
 * Pays them all at once and returns the steps' records once every step has run. The demo prints and
 * checks the result; test/sample-app/fulfilment.e2e.spec.ts asserts on it.
 */
import type { FulfilmentView } from '../src/fulfilment/fulfilment.controller.js';
import { orderSteps, type OrderSteps } from './fulfilment-claims.js';
import type { SampleInstance } from './sample-instances.js';

export interface FulfilmentSettings {
  /** Orders to pay, spread over the instances in turn. */
  readonly orders: number;
  /** The stocked item they buy (stocked with one unit per order). */
  readonly item: string;
  readonly timeoutMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function call<T>(instance: SampleInstance, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${instance.base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${instance.base}${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** Creates and pays `orders` orders, order i on instance i mod n; resolves with their steps, in payment order. */
export async function runFulfilmentScenario(instances: readonly SampleInstance[], settings: FulfilmentSettings): Promise<OrderSteps[]> {
  const { orders: count, item, timeoutMs = 60_000 } = settings;
  await call(instances[0], 'PUT', `/items/${encodeURIComponent(item)}`, { stock: count });
  const payOn = Array.from({ length: count }, (_, i) => instances[i % instances.length]);
  const orders = await Promise.all(payOn.map((instance) => call<{ id: string }>(instance, 'POST', '/orders', { item })));
  await Promise.all(orders.map((order, i) => call(payOn[i], 'POST', `/orders/${order.id}/pay`)));

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const views = await Promise.all(orders.map((order) => call<FulfilmentView>(instances[0], 'GET', `/orders/${order.id}/fulfilment`)));
    if (views.every((view) => view.steps.every((step) => step.done && !step.job))) {
      return views.map((view, i) => orderSteps(view, payOn[i].name));
    }
    if (Date.now() > deadline) {
      const waiting = views.flatMap((view) =>
        view.steps.filter((step) => !step.done || step.job).map((step) => `${step.jobId} (${step.job?.state ?? 'no job'})`),
      );
      throw new Error(`timed out after ${timeoutMs} ms waiting for the steps ${waiting.join(', ')}`);
    }
    await sleep(100);
  }
}
