import type { INestApplication } from '@nestjs/common';
import type { LockHandle, LockService } from '../../lib/index.js';
import { startHttpApp } from '../fixtures/with-lock-http.js';

describe('409 Conflict from a lock carries Retry-After', () => {
  let app: INestApplication;
  let baseUrl: string;
  let locks: LockService;

  beforeAll(async () => {
    ({ app, baseUrl, locks } = await startHttpApp());
  });
  afterAll(async () => {
    await app.close();
  });

  /** Holds `key` from outside any request while the request runs. */
  const postWhileHeld = async (key: string, path: string, headers: Record<string, string> = {}) => {
    const holder: LockHandle = await locks.acquire(key);
    try {
      const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers });
      await response.text();
      return { status: response.status, retryAfter: response.headers.get('retry-after') };
    } finally {
      await holder.release();
    }
  };

  it.each([
    ['@WithLock on the controller method', 'order:11', '/orders/11/pay', {}],
    ['@WithLock on a service method the route calls', 'order:12', '/orders/12/capture', {}],
    ['@WithRequestLock on the route', 'order:13', '/orders/13/ship', {}],
    ['@WithRequestLock on the controller', 'tenant:acme', '/reports', { 'x-tenant': 'acme' }],
  ])('%s: Retry-After is a whole number of seconds (1)', async (_, key, path, headers) => {
    expect(await postWhileHeld(key, path, headers)).toEqual({ status: 409, retryAfter: '1' });
  });

  it('a route that succeeds has no Retry-After', async () => {
    const response = await fetch(`${baseUrl}/orders/14/pay`, { method: 'POST' });
    await response.text();
    expect(response.status).toBe(201);
    expect(response.headers.get('retry-after')).toBeNull();
  });
});
