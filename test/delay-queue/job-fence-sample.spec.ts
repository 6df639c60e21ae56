import type { INestApplication } from '@nestjs/common';
import { runInJobContext, type JobContext } from '../../lib/delay-queue/interfaces/job-context.interface.js';
import { Database } from '../../sample-app/src/database/database.js';
import type { OrderFulfilment } from '../../sample-app/src/fulfilment/fulfilment-steps.js';
import { FulfilmentService } from '../../sample-app/src/fulfilment/fulfilment.service.js';
import { httpJson } from '../support/http-json.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { listenSampleApp } from '../sample-app/support/listen-sample-app.js';

interface FulfilmentRow {
  outcome: string;
  attempt: number;
  fence: string;
  finished_at: Date;
}

/*
 * The sample app's `order.fulfil` reserve step writes the order's `fulfilment_steps` row fenced with its
 * delivery's token (JobContext.current()): the real job writes it, a stale delivery (lower token)
 * changes nothing, a later one (higher token) takes the row over.
 */
describe('sample app: order.fulfil fences its write with the job’s fencing token', () => {
  let app: INestApplication;
  let base: string;
  let db: Database;
  const call = (method: string, path: string, body?: unknown) => httpJson(base, method, path, body);

  beforeAll(async () => {
    ({ app, base } = await listenSampleApp({ databaseUrl: undefined, orderExpiryMs: 120_000, keyPrefix: uniquePrefix('jfs') }));
    db = app.get(Database);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  async function fulfilment(orderId: string): Promise<FulfilmentRow | undefined> {
    const { rows } = await db.query<FulfilmentRow>(
      `SELECT outcome, attempt, fence::text AS fence, finished_at FROM fulfilment_steps WHERE order_id = $1 AND step = 'reserve'`,
      [orderId],
    );
    return rows[0];
  }

  /** Runs the handler as a delivery with the given token would (what a stalled or later consumer does). */
  function deliver(payload: OrderFulfilment, attempt: number, fencingToken: string): Promise<void> {
    const context: JobContext = {
      id: `fulfil:${payload.orderId}:${payload.step}`,
      topic: 'order.fulfil',
      attempt,
      maxAttempts: 3,
      scheduledAt: new Date(),
      createdAt: new Date(),
      claimedAt: new Date(),
      fencingToken,
      signal: new AbortController().signal,
      progress: () => Promise.resolve(),
      log: () => undefined,
    };
    return runInJobContext(context, () => app.get(FulfilmentService).fulfil(payload, context));
  }

  it('the paid order’s fulfilment row carries the delivery’s token; a stale delivery changes nothing, a later one takes over', async () => {
    expect((await call('PUT', '/items/fence-widget', { stock: 2 })).status).toBe(200);
    const order = (await call('POST', '/orders', { item: 'fence-widget' })).body as { id: string };
    expect((await call('POST', `/orders/${order.id}/pay`)).status).toBe(200);

    const written = await waitFor(() => fulfilment(order.id), 15_000, 'the order.fulfil job to write its row');
    expect(written).toMatchObject({ outcome: 'reserved', attempt: 1 });
    expect(BigInt(written.fence)).toBeGreaterThan(0n);
    expect((await call('GET', '/items/fence-widget')).body).toEqual({ sku: 'fence-widget', stock: 1, sold: 1 });

    const payload = { orderId: order.id, item: 'fence-widget', step: 'reserve' } as const;
    await deliver(payload, 2, (BigInt(written.fence) - 1n).toString());
    expect(await fulfilment(order.id)).toEqual(written);

    const later = (BigInt(written.fence) + 1n).toString();
    await deliver(payload, 2, later);
    expect(await fulfilment(order.id)).toMatchObject({ outcome: 'reserved', attempt: 2, fence: later });
    // The reservation itself is idempotent per order: still one unit sold.
    expect((await call('GET', '/items/fence-widget')).body).toEqual({ sku: 'fence-widget', stock: 1, sold: 1 });
  });

  it('an order of an item the inventory does not track gets a fenced "not-stocked" row', async () => {
    const order = (await call('POST', '/orders', { item: 'gift-card' })).body as { id: string };
    expect((await call('POST', `/orders/${order.id}/pay`)).status).toBe(200);
    const written = await waitFor(() => fulfilment(order.id), 15_000, 'the order.fulfil job to write its row');
    expect(written).toMatchObject({ outcome: 'not-stocked', attempt: 1 });
  });
});
