import type { INestApplication } from '@nestjs/common';
import { listenSampleApp } from '../sample-app/support/listen-sample-app.js';
import { uniquePrefix } from '../support/test-app.js';

describe('sample app: /metrics and /health/ready (e2e)', () => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    ({ app, base } = await listenSampleApp({ databaseUrl: undefined, orderExpiryMs: 60_000, keyPrefix: uniquePrefix('obs') }));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  it('serves Prometheus metrics, including the order-expiry queue depth', async () => {
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toContain('# TYPE redis_lock_lock_wait_seconds histogram');
    expect(text).toMatch(/redis_lock_queue_jobs\{topic="order\.expire",state="due"\} \d+/);
  });

  it('answers the terminus readiness check', async () => {
    const response = await fetch(`${base}/health/ready`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; info: Record<string, { status: string }> };
    expect(body.status).toBe('ok');
    expect(body.info.redis.status).toBe('up');
    expect(body.info.queues.status).toBe('up');
  });
});
