import type { INestApplication } from '@nestjs/common';
import { orderSteps, stepViolations } from '../../sample-app/demo/fulfilment-claims.js';
import type { FulfilmentView } from '../../sample-app/src/fulfilment/fulfilment.controller.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';
import { httpJson } from '../support/http-json.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { listenSampleApp } from './support/listen-sample-app.js';

/**
 * The sample orders service over real HTTP and real Redis, once on its embedded database (PGlite,
 * the no-setup default) and once on a real PostgreSQL server (what DATABASE_URL selects).
 */
describe.each([
  ['embedded PGlite', false],
  ['PostgreSQL server', true],
])('sample app: orders service on %s (e2e)', (_label, realPostgres) => {
  let app: INestApplication;
  let base: string;
  let postgres: LocalPostgres | undefined;

  beforeAll(async () => {
    if (realPostgres) postgres = await startLocalPostgres();
    ({ app, base } = await listenSampleApp({ databaseUrl: postgres?.url, orderExpiryMs: 1_500, keyPrefix: uniquePrefix('sample') }));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await postgres?.stop();
  });

  const call = (method: string, path: string, body?: unknown) => httpJson(base, method, path, body);

  it('reports Redis and the database as up', async () => {
    const health = await call('GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', redis: { status: 'up' }, database: { status: 'up' } });
  });

  it('lets exactly one of 30 concurrent pays succeed; the rest get 409', async () => {
    const order = (await call('POST', '/orders', { item: 'ticket' })).body;
    expect(order.status).toBe('pending');
    const results = await Promise.all(Array.from({ length: 30 }, () => call('POST', `/orders/${order.id}/pay`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(29);
    expect(results.find((r) => r.status === 409)!.body.message).toMatch(/already paid|could not|lock/i);
    const paid = (await call('GET', `/orders/${order.id}`)).body;
    expect(paid).toMatchObject({ status: 'paid', payments: 1 });
  });

  it('expires an unpaid order through its delayed job, and leaves a paid one alone', async () => {
    const unpaid = (await call('POST', '/orders', { item: 'room' })).body;
    const paid = (await call('POST', '/orders', { item: 'seat' })).body;
    expect((await call('POST', `/orders/${paid.id}/pay`)).status).toBe(200);
    expect((await call('GET', `/orders/${unpaid.id}`)).body.status).toBe('pending');

    let current = unpaid;
    await holdsWithin(
      async () => {
        current = (await call('GET', `/orders/${unpaid.id}`)).body;
        return current.status !== 'pending';
      },
      15_000,
      { every: 100 },
    );
    expect(current.status).toBe('expired');
    expect(Date.parse(current.expiredAt)).toBeGreaterThanOrEqual(Date.parse(current.expiresAt));
    await sleep(500);
    expect((await call('GET', `/orders/${paid.id}`)).body.status).toBe('paid');
    // A paid order cannot be paid again, and an expired one cannot be paid at all.
    expect((await call('POST', `/orders/${unpaid.id}/pay`)).status).toBe(409);
  });

  it('never oversells limited stock to concurrent buyers', async () => {
    await call('PUT', '/items/limited', { stock: 4 });
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => call('POST', '/items/limited/purchase', { buyer: `b${i}` })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    expect(results.filter((r) => r.status === 409)).toHaveLength(21);
    expect((await call('GET', '/items/limited')).body).toEqual({ sku: 'limited', stock: 0, sold: 4 });
  });

  it('answers 404 for an unknown order', async () => {
    expect((await call('GET', '/orders/nope')).status).toBe(404);
    expect((await call('GET', '/orders/nope/fulfilment')).status).toBe(404);
  });

  const fulfilment = async (orderId: string): Promise<FulfilmentView> => (await call('GET', `/orders/${orderId}/fulfilment`)).body;
  const allDone = (orderId: string) =>
    waitFor(
      async () => {
        const view = await fulfilment(orderId);
        return view.steps.every((s) => s.done && !s.job) && view;
      },
      20_000,
      `every fulfilment step of ${orderId} to run`,
      { every: 50 },
    );

  it("runs a paid order's fulfilment as reserve → ship → notify in its group, one step at a time", async () => {
    await call('PUT', '/items/lamp', { stock: 5 });
    const order = (await call('POST', '/orders', { item: 'lamp' })).body;
    expect((await call('POST', `/orders/${order.id}/pay`)).status).toBe(200);
    const view = await allDone(order.id);
    expect(view.group).toBe(`order:${order.id}`);
    expect(view.steps.map((s) => [s.jobId, s.done?.outcome])).toEqual([
      [`fulfil:${order.id}:reserve`, 'reserved'],
      [`fulfil:${order.id}:ship`, 'shipped'],
      [`fulfil:${order.id}:notify`, 'notified'],
    ]);
    const steps = orderSteps(view, 'app');
    expect(steps.steps.map((s) => s.step)).toEqual(['reserve', 'ship', 'notify']);
    expect(stepViolations(steps)).toEqual([]);
    expect((await call('GET', '/items/lamp')).body).toMatchObject({ stock: 4, sold: 1 });
  });

  it('holds ship and notify while reserve fails; the dead reserve, retried after a restock, brings them back in order', async () => {
    await call('PUT', '/items/sold-out', { stock: 0 });
    const order = (await call('POST', '/orders', { item: 'sold-out' })).body;
    expect((await call('POST', `/orders/${order.id}/pay`)).status).toBe(200);
    // Between two attempts of reserve, its order's later steps still wait in the group and have not run.
    const held = await waitFor(
      async () => {
        const view = await fulfilment(order.id);
        return view.steps[0].job?.state === 'scheduled' && view;
      },
      15_000,
      'reserve to wait for its retry',
      { every: 20 },
    );
    expect(held.steps[0]).toMatchObject({
      done: null,
      job: { attempts: expect.any(Number), lastError: expect.stringContaining('sold out') },
    });
    expect(held.steps.slice(1).map((s) => [s.job?.state, s.done])).toEqual([
      ['waiting-group', null],
      ['waiting-group', null],
    ]);
    // The dead reserve frees the group: ship and notify run, find no reservation, and record nothing.
    await waitFor(async () => (await fulfilment(order.id)).steps[0].job?.state === 'dead', 15_000, 'reserve to die', { every: 50 });
    const afterDeath = await waitFor(
      async () => {
        const view = await fulfilment(order.id);
        return view.steps.slice(1).every((s) => s.job === null) && view;
      },
      15_000,
      'ship and notify to end',
      { every: 50 },
    );
    expect(afterDeath.steps.map((s) => s.done)).toEqual([null, null, null]);

    await call('PUT', '/items/sold-out', { stock: 1 });
    const retry = await fetch(`${base}/dashboard/api/topics/order.fulfil/jobs/${encodeURIComponent(`fulfil:${order.id}:reserve`)}/retry`, {
      method: 'POST',
      headers: { 'x-redis-lock-dashboard': '1' },
    });
    expect(retry.status).toBe(200);
    const steps = orderSteps(await allDone(order.id), 'app');
    expect(steps.steps.map((s) => s.step)).toEqual(['reserve', 'ship', 'notify']);
    expect(stepViolations(steps)).toEqual([]);
    expect((await call('GET', '/items/sold-out')).body).toEqual({ sku: 'sold-out', stock: 0, sold: 1 });
  });
});
