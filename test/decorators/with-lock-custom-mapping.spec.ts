import type { INestApplication } from '@nestjs/common';
import type { LockService } from '../../lib/index.js';
import { startCustomMappingApp } from '../fixtures/with-lock-custom-mapping.js';

/**
 * A subclass of RequestLockInterceptor that answers 423 instead of 409 answers for every lock of the
 * routes it applies to, @WithRequestLock and @WithLock alike, whether applied with @UseInterceptors
 * or registered as an APP_INTERCEPTOR of the root module: the module's own interceptor stands aside.
 */
describe.each(['applied', 'global'] as const)('a RequestLockInterceptor subclass answering 423 (%s)', (setup) => {
  let app: INestApplication;
  let baseUrl: string;
  let locks: LockService;

  beforeAll(async () => {
    ({ app, baseUrl, locks } = await startCustomMappingApp(setup));
  });
  afterAll(() => app.close());

  const statusWhileHeld = async (key: string, path: string) => {
    const holder = await locks.acquire(key);
    try {
      const response = await fetch(`${baseUrl}/${setup}/${path}`, { method: 'POST' });
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
    } finally {
      await holder.release();
    }
  };

  it('answers 423 for a @WithRequestLock lock not free in time', async () => {
    expect(await statusWhileHeld('order:1', 'request/1')).toEqual({
      status: 423,
      retryAfter: '1',
      body: { statusCode: 423, code: 'LOCK_ACQUIRE_TIMEOUT' },
    });
  });

  it('answers 423 for a @WithLock lock not free in time', async () => {
    expect(await statusWhileHeld('order:2', 'method/2')).toEqual({
      status: 423,
      retryAfter: '1',
      body: { statusCode: 423, code: 'LOCK_ACQUIRE_TIMEOUT' },
    });
  });

  it('runs both routes under their locks when free', async () => {
    expect((await fetch(`${baseUrl}/${setup}/request/3`, { method: 'POST' })).status).toBe(201);
    expect((await fetch(`${baseUrl}/${setup}/method/3`, { method: 'POST' })).status).toBe(201);
  });
});
