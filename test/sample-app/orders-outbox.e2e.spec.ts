import { jest } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Client } from 'pg';
import { DEFAULT_OUTBOX_TABLE } from '../../lib/outbox/postgres/outbox-table.js';
import { startSampleInstance, stopSampleInstance, type SampleInstance } from '../../sample-app/demo/sample-instances.js';
import { Database } from '../../sample-app/src/database/database.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';
import { httpJson } from '../support/http-json.js';
import { waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { listenSampleApp } from './support/listen-sample-app.js';
import { SAMPLE_APP_MAIN } from './support/sample-app-main.js';

jest.setTimeout(180_000);
afterEach(() => jest.restoreAllMocks());

failOnUnhandledRejections();

/**
 * The sample's orders commit with their `order.expire` job through the transactional outbox: an
 * order created while Redis is down (its private redis-server SIGKILLed, so nothing written to
 * Redis before survives) is committed with its job's outbox row, and still expires once Redis is
 * back. On the embedded database and on a PostgreSQL server.
 */
describe.each([
  ['embedded PGlite', false],
  ['PostgreSQL server', true],
])('sample app: an order created while Redis is down still expires (%s, e2e)', (_label, realPostgres) => {
  let redis: LocalRedisServer;
  let postgres: LocalPostgres | undefined;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    redis = await startLocalRedisServer();
    if (realPostgres) postgres = await startLocalPostgres();
    ({ app, base } = await listenSampleApp({
      redisUrl: redis.url,
      databaseUrl: postgres?.url,
      orderExpiryMs: 1_500,
      keyPrefix: uniquePrefix('sample-outbox'),
    }));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await postgres?.stop();
    await redis?.stop();
  });

  const call = (method: string, path: string, body?: unknown) => httpJson(base, method, path, body);
  const outboxJobIds = async () =>
    (await app.get(Database).query<{ job_id: string }>(`SELECT job_id FROM ${DEFAULT_OUTBOX_TABLE}`)).rows.map((row) => row.job_id);

  it('commits the order with its order.expire outbox row, and the job runs once Redis returns', async () => {
    muteNestLogger('error', 'warn');
    // Down until the order is committed with its outbox row.
    let bringBack!: () => void;
    const restarted = redis.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    await waitFor(() => redis.process.signalCode !== null, 10_000, 'redis-server to be killed');

    const startedAt = Date.now();
    const created = await call('POST', '/orders', { item: 'lamp' });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('pending');
    expect(Date.now() - startedAt).toBeLessThan(7_000); // the outage does not hold the request
    // Redis is still down: the job waits in the outbox table, committed with the order.
    expect(await outboxJobIds()).toContain(created.body.id);

    bringBack();
    await restarted;
    const order = await waitFor(
      async () => {
        const current = (await call('GET', `/orders/${created.body.id}`)).body;
        return current.status === 'pending' ? undefined : current;
      },
      60_000,
      'the order to be expired by its job after the outage',
      { every: 100 },
    );
    expect(order.status).toBe('expired');
    expect(Date.parse(order.expiredAt)).toBeGreaterThanOrEqual(Date.parse(order.expiresAt));
    await waitFor(async () => ((await outboxJobIds()).length === 0 ? true : undefined), 30_000, 'the outbox row to be deleted', {
      every: 200,
    });
  });
});

/**
 * The process that committed the order dies before its job reaches Redis (Redis is down, then the
 * instance is SIGKILLed while its write waits): another instance on the same database relays the
 * outbox row, and the order expires. Without the outbox the job lived only in the dead process.
 * PostgreSQL only: an embedded PGlite database dies with its process.
 */
describe('sample app: an order whose instance is SIGKILLed right after COMMIT still expires (PostgreSQL server, e2e)', () => {
  let redis: LocalRedisServer;
  let postgres: LocalPostgres;
  let crashed: SampleInstance | undefined;
  let survivor: INestApplication | undefined;
  const keyPrefix = uniquePrefix('sample-outbox-crash');

  beforeAll(async () => {
    redis = await startLocalRedisServer();
    postgres = await startLocalPostgres();
  }, 60_000);
  afterAll(async () => {
    if (crashed) await stopSampleInstance(crashed, 'SIGKILL');
    await survivor?.close();
    await postgres?.stop();
    await redis?.stop();
  });

  it("another instance relays the dead instance's outbox row: the order expires", async () => {
    muteNestLogger('error', 'warn');
    crashed = await startSampleInstance(
      SAMPLE_APP_MAIN,
      'crashed',
      // Its claim of the order's outbox row lasts 5 s (the module's default is 60 s).
      {
        REDIS_URL: redis.url,
        DATABASE_URL: postgres.url,
        ORDER_EXPIRY_MS: '1500',
        REDIS_KEY_PREFIX: keyPrefix,
        OUTBOX_CLAIM_LEASE_MS: '5000',
      },
      150_000,
    );
    // Down until the instance that committed the order has been killed.
    let bringBack!: () => void;
    const restarted = redis.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    await waitFor(() => redis.process.signalCode !== null, 10_000, 'redis-server to be killed');
    const created = await httpJson(crashed.base, 'POST', '/orders', { item: 'kettle' });
    expect(created.status).toBe(201);
    // COMMIT is done; the job's write to Redis waits for the outage. The process dies now.
    expect(await stopSampleInstance(crashed, 'SIGKILL')).toMatchObject({ signal: 'SIGKILL' });

    const client = new Client({ connectionString: postgres.url });
    await client.connect();
    const outboxJobIds = async () =>
      (await client.query<{ job_id: string }>(`SELECT job_id FROM ${DEFAULT_OUTBOX_TABLE}`)).rows.map((row) => row.job_id);
    try {
      expect(await outboxJobIds()).toEqual([created.body.id]);
      bringBack();
      await restarted;
      // The survivor takes the row over once the dead instance's claim lease (5 s) has lapsed.
      const started = await listenSampleApp({ redisUrl: redis.url, databaseUrl: postgres.url, orderExpiryMs: 1_500, keyPrefix });
      survivor = started.app;
      const order = await waitFor(
        async () => {
          const current = (await httpJson(started.base, 'GET', `/orders/${created.body.id}`)).body;
          return current.status === 'pending' ? undefined : current;
        },
        120_000,
        'the order to be expired by the job the survivor relayed',
        { every: 250 },
      );
      expect(order.status).toBe('expired');
      await waitFor(async () => ((await outboxJobIds()).length === 0 ? true : undefined), 30_000, 'the outbox row to be deleted', {
        every: 200,
      });
    } finally {
      await client.end();
    }
  }, 300_000);
});
