/**
 * The demo's orders across three instances: each paid order's fulfilment is three jobs (reserve →
 * ship → notify) of its group `order:<id>`. Prints per order which instance ran each step and when;
 * checks that an order's steps ran in order and never overlapped while different orders ran at once.
 */
import { check, note, step } from './demo-report.js';
import { mostOrdersAtOnce, stepsRunTooEarly, stepViolations, type OrderSteps } from './fulfilment-claims.js';
import { runFulfilmentScenario } from './fulfilment-scenario.js';
import type { SampleInstance } from './sample-instances.js';

const ORDERS = 6;

export async function demoFulfilmentAcrossInstances(instances: readonly SampleInstance[], stepMs: number): Promise<void> {
  step(`Paying ${ORDERS} orders across the three instances: each order's reserve → ship → notify runs in its group order:<id>`);
  const orders = await runFulfilmentScenario(instances, { orders: ORDERS, item: 'parcel' });
  printSteps(orders);
  // A step run before the one it follows succeeded records nothing (it runs again later): the instances log it.
  const violations = [...orders.flatMap(stepViolations), ...instances.flatMap((instance) => stepsRunTooEarly(instance.output()))];
  const gaps = orders.flatMap((order) => order.steps.slice(1).map((s, i) => s.start - order.steps[i].end));
  check(
    "every order's steps ran in order, one at a time",
    violations.length === 0,
    violations.length > 0
      ? violations.join('; ')
      : `${orders.length} orders × 3 steps of ${stepMs} ms, none run before the step before it succeeded; ` +
          `the next step of an order started ${Math.min(...gaps)}–${Math.max(...gaps)} ms after the one before ended`,
  );
  const atOnce = mostOrdersAtOnce(orders);
  check('different orders ran in parallel', atOnce > 1, `up to ${atOnce} orders had a step running at the same instant`);
  const perInstance = instances.map(
    (instance) => `${instance.name} ${orders.flatMap((o) => o.steps).filter((s) => s.instance === instance.name).length}`,
  );
  const moved = orders.filter((order) => new Set(order.steps.map((s) => s.instance)).size > 1).length;
  note(`steps run per instance: ${perInstance.join(', ')}; ${moved} of ${orders.length} orders had steps on more than one instance`);
}

function printSteps(orders: readonly OrderSteps[]): void {
  const t0 = Math.min(...orders.flatMap((order) => order.steps.map((s) => s.start)));
  const at = (ms: number) => `+${String(ms - t0).padStart(5)} ms`;
  note('');
  note('order     paid on      step     ran on       from         to');
  for (const order of orders) {
    order.steps.forEach((s, i) => {
      const head = i === 0 ? `${order.orderId.slice(0, 8)}  ${order.paidOn.padEnd(11)}` : ' '.repeat(8 + 2 + 11);
      note(`${head}  ${s.step.padEnd(7)}  ${s.instance.padEnd(11)}  ${at(s.start)}  ${at(s.end)}`);
    });
  }
  note('');
}
