import { mostOrdersAtOnce, stepsRunTooEarly, stepViolations, type OrderSteps } from '../../sample-app/demo/fulfilment-claims.js';
import { runFulfilmentScenario } from '../../sample-app/demo/fulfilment-scenario.js';
import { uniquePrefix } from '../support/test-app.js';
import { startSampleInstancesOnPostgres, type SampleInstancesOnPostgres } from './support/sample-instances-on-postgres.js';

/*
 * Orders paid across three real instances (processes) of the sample service on one Redis and one
 * PostgreSQL database: each order's fulfilment is three jobs (reserve → ship → notify) of its group
 * `order:<id>`. The steps' records (GET /orders/:id/fulfilment, times on the database's clock) show
 * each order's steps in order and never overlapping, on whichever instance, while orders run in
 * parallel. The scenario is the demo's (sample-app/demo/fulfilment-scenario.ts).
 */
const STEP_MS = 200;
const ORDERS = 9;

describe('sample app: order fulfilment steps in their order group across three instances (e2e)', () => {
  let started: SampleInstancesOnPostgres | undefined;
  let orders: OrderSteps[];

  beforeAll(async () => {
    const env = { REDIS_KEY_PREFIX: uniquePrefix('sample-fulfil'), FULFILMENT_STEP_MS: String(STEP_MS) };
    started = await startSampleInstancesOnPostgres(['a', 'b', 'c'], env);
    orders = await runFulfilmentScenario(started.instances, { orders: ORDERS, item: 'parcel' });
  }, 300_000);

  afterAll(() => started?.stop());

  it("runs every order's steps in order, reserve → ship → notify, each once", () => {
    expect(orders).toHaveLength(ORDERS);
    for (const order of orders) expect(order.steps.map((s) => s.step)).toEqual(['reserve', 'ship', 'notify']);
  });

  it('never starts a step of an order before the one before it has ended', () => {
    expect(orders.flatMap(stepViolations)).toEqual([]);
    // Nor ran one that found the step before it not done (it would have done nothing and run again later).
    expect(started!.instances.flatMap((instance) => stepsRunTooEarly(instance.output()))).toEqual([]);
  });

  it('runs different orders in parallel, on more than one instance', () => {
    expect(mostOrdersAtOnce(orders)).toBeGreaterThan(1);
    // Which instance claims a step is up to the instances (one took 12 of 18 in a demo run): at least two do.
    expect(new Set(orders.flatMap((order) => order.steps.map((s) => s.instance))).size).toBeGreaterThan(1);
  });
});
