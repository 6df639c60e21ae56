import type { INestApplication } from '@nestjs/common';
import { DelayQueueService, RedisConnectionError } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { listenSampleApp } from '../sample-app/support/listen-sample-app.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';

/**
 * docs/observability.md, "Security": a health endpoint is usually public (load balancers, probes),
 * so while Redis is down it answers a stable, generic reason and keeps the cause (which names
 * Redis's address and port) for the application log.
 */
describe('health answers say what is down, never where Redis is (sample app, over HTTP)', () => {
  let server: LocalRedisServer;
  let app: INestApplication;
  let base: string;
  let port: string;

  beforeAll(async () => {
    muteNestLogger('warn', 'error');
    server = await startLocalRedisServer();
    port = new URL(server.url).port;
    ({ app, base } = await listenSampleApp({
      databaseUrl: undefined,
      orderExpiryMs: 60_000,
      keyPrefix: uniquePrefix('hr'),
      redisUrl: server.url,
    }));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await server?.stop();
  });

  it('GET /health/ready (terminus) and GET /health answer 503 without the address, port or socket error', async () => {
    const ready = await fetch(`${base}/health/ready`);
    expect(ready.status).toBe(200);

    await server.stop();
    // The module knows Redis is unreachable (after unreachableTimeout): its errors now name the address.
    const queue = app.get(DelayQueueService);
    const cause = await waitFor(
      () =>
        queue.stats('order.expire').then(
          () => undefined,
          (error: unknown) => (error instanceof RedisConnectionError ? error : undefined),
        ),
      20_000,
      'stats() to fail with RedisConnectionError',
    );
    expect(cause.message).toContain(port);

    for (const path of ['/health/ready', '/health']) {
      const response = await fetch(`${base}${path}`);
      const text = await response.text();
      expect({ path, status: response.status }).toEqual({ path, status: 503 });
      expect(text).not.toContain(port);
      expect(text).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|connect /);
    }
    const body = (await (await fetch(`${base}/health/ready`)).json()) as { error: Record<string, { status: string; message?: string }> };
    expect(body.error.redis).toEqual({ status: 'down', message: 'Redis did not answer (the cause is in the application log)' });
    expect(body.error.queues).toEqual({ status: 'down', message: 'Queue counts could not be read (the cause is in the application log)' });
  }, 60_000);
});
