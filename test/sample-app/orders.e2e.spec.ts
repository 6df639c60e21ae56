import type { INestApplication } from '@nestjs/common';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';
import { httpJson } from '../support/http-json.js';
import { holdsWithin, sleep } from '../support/timing.js';
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
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => call('POST', '/items/limited/purchase', { buyer: `b${i}` })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    expect(results.filter((r) => r.status === 409)).toHaveLength(21);
    expect((await call('GET', '/items/limited')).body).toEqual({ sku: 'limited', stock: 0, sold: 4 });
  });

  it('answers 404 for an unknown order', async () => {
    expect((await call('GET', '/orders/nope')).status).toBe(404);
  });
});
