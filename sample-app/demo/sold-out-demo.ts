/**
 * The demo's sold-out order: its `reserve` step fails and is retried with backoff while `ship` and
 * `notify` wait in the order's group; `reserve` ends in the dead letters (which frees the group:
 * `ship` and `notify` find no reservation and do nothing); after a restock the operator retries it
 * from the dashboard, and the three steps then run in order.
 */
import type { FulfilmentView } from '../src/fulfilment/fulfilment.controller.js';
import { api, poll } from './demo-http.js';
import { check, note, step } from './demo-report.js';
import { orderSteps, stepViolations } from './fulfilment-claims.js';

export async function demoSoldOutFulfilment(base: string): Promise<void> {
  step('Fulfilling an order of a sold-out item: reserve fails and holds ship and notify; then a retry from the dashboard');
  await api('PUT', `${base}/items/gift-card`, { stock: 0 });
  const order = (await api('POST', `${base}/orders`, { item: 'gift-card' })).body;
  await api('POST', `${base}/orders/${order.id}/pay`);
  const fulfilment = async (): Promise<FulfilmentView> => (await api('GET', `${base}/orders/${order.id}/fulfilment`)).body;
  const dashboard = `${base}/dashboard/api`;
  const topicStats = async () =>
    (await api('GET', `${dashboard}/topics`)).body.topics.find((t: { topic: string }) => t.topic === 'order.fulfil');
  const reserveId = `fulfil:${order.id}:reserve`;
  note(`paid order ${order.id}: reserve, ship and notify are jobs of the group order:${order.id}; reserve finds gift-card sold out…`);

  // Between two attempts of reserve: it waits for its retry, and the order's later steps wait behind it.
  const held = await poll(async () => {
    const view = await fulfilment();
    return view.steps[0].job?.state === 'scheduled' && view.steps[0].job.attempts >= 1 ? view : undefined;
  }, 15_000);
  const stats = await topicStats();
  const [reserve, ship, notify] = held?.steps ?? [];
  check(
    'a failing step holds the later steps of its order',
    held !== undefined && [ship, notify].every((s) => s.job?.state === 'waiting-group' && s.done === null),
    held
      ? `reserve failed (attempt ${reserve.job?.attempts}: "${reserve.job?.lastError}") and waits for its ` +
          `retry; ship ${ship.job?.state ?? 'gone'}, ` +
          (`notify ${notify.job?.state ?? 'gone'}, neither ran (order.fulfil: ${stats?.grouped} waiting for ` +
            `their group, ${stats?.busyGroups} busy group)`)
      : 'reserve never waited for a retry within 15 s',
  );

  const deadJob = await poll(async () => {
    const dead = (await api('GET', `${dashboard}/topics/order.fulfil/jobs?state=dead`)).body;
    return dead.jobs?.find((j: { id: string }) => j.id === reserveId);
  }, 15_000);
  check(
    'the failing step reached the dead letters after its attempts',
    deadJob !== undefined && deadJob.attempts === 3,
    deadJob ? `${deadJob.attempts} attempts, last error "${deadJob.lastError}"` : 'not dead within 15 s',
  );
  // A dead letter frees its group: ship and notify run, find no reservation, and do nothing.
  const skipped = await poll(async () => {
    const view = await fulfilment();
    return view.steps.slice(1).every((s) => s.job === null) ? view : undefined;
  }, 15_000);
  note(
    `the dead letter freed the group: ship and notify ran and did nothing ` +
      `(${skipped?.steps.filter((s) => s.done).length ?? '?'} steps recorded)`,
  );

  await api('PUT', `${base}/items/gift-card`, { stock: 3 });
  const retry = await api('POST', `${dashboard}/topics/order.fulfil/jobs/${encodeURIComponent(reserveId)}/retry`, undefined, {
    'x-redis-lock-dashboard': '1',
  });
  note(`restocked gift-card; POST …/dashboard/api/topics/order.fulfil/jobs/${reserveId}/retry → ${retry.status}`);
  const done = await poll(async () => {
    const view = await fulfilment();
    return view.steps.every((s) => s.done && !s.job) ? view : undefined;
  }, 15_000);
  const giftCard = (await api('GET', `${base}/items/gift-card`)).body;
  const stepsAfter = done && orderSteps(done, 'the service');
  const problems = stepsAfter ? stepViolations(stepsAfter) : ['the steps did not all run within 15 s'];
  const deadAfter = (await topicStats())?.dead;
  check(
    'the retried reserve step reserved the item, then ship and notify ran in order',
    retry.status === 200 &&
      giftCard.sold === 1 &&
      deadAfter === 0 &&
      problems.length === 0 &&
      skipped?.steps.every((s) => s.done === null) === true,
    problems.length > 0
      ? problems.join('; ')
      : `${stepsAfter!.steps.map((s) => s.step).join(' → ')}; sold ${giftCard.sold}, ${giftCard.stock} left, ${deadAfter} dead`,
  );
}
