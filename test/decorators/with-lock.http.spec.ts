import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { LockHandle, LockService } from '../../lib/index.js';
import { ownersKey } from '../fixtures/with-lock-app.js';
import { startHttpApp, type Probe } from '../fixtures/with-lock-http.js';
import { rawRedis } from '../support/test-app.js';

describe('locks in an HTTP application', () => {
  let app: INestApplication;
  let baseUrl: string;
  let keyPrefix: string;
  let locks: LockService;
  let probe: Probe;
  let redis: Redis;

  beforeAll(async () => {
    ({ app, baseUrl, keyPrefix, locks, probe } = await startHttpApp());
    redis = rawRedis();
  });
  afterAll(async () => {
    redis.disconnect();
    await app.close();
  });
  afterEach(() => {
    probe.hook = undefined;
  });

  const request = async (method: string, path: string, init: RequestInit = {}) => {
    const response = await fetch(`${baseUrl}${path}`, { method, ...init });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

  /** Holds `key` from outside any request while `fn` runs. */
  const whileHeld = async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const holder: LockHandle = await locks.acquire(key);
    try {
      return await fn();
    } finally {
      await holder.release();
    }
  };

  const conflict = {
    statusCode: 409,
    error: 'Conflict',
    code: 'LOCK_ACQUIRE_TIMEOUT',
    message: 'The resource is locked by another operation in progress. Retry later.',
  };

  describe('@WithLock on a controller method', () => {
    it('runs the handler under the lock', async () => {
      expect(await request('POST', '/orders/1/pay')).toEqual({ status: 201, body: { id: '1', key: 'order:1' } });
    });

    it('answers 409 Conflict with a clear body when the lock is taken', async () => {
      const answer = await whileHeld('order:2', () => request('POST', '/orders/2/pay'));
      expect(answer).toEqual({ status: 409, body: conflict });
    });

    it('answers with what onLocked returns', async () => {
      const answer = await whileHeld('order:3', () => request('POST', '/orders/3/try'));
      expect(answer).toEqual({ status: 201, body: { busy: 'order:3' } });
      expect(await request('POST', '/orders/3/try')).toEqual({ status: 201, body: { id: '3' } });
    });
  });

  describe('@WithLock on a service method called by a controller', () => {
    it('answers 409 Conflict when the lock is taken', async () => {
      expect(await request('POST', '/orders/4/capture')).toEqual({
        status: 201,
        body: { captured: '4', key: 'order:4' },
      });
      expect(await whileHeld('order:4', () => request('POST', '/orders/4/capture'))).toEqual({
        status: 409,
        body: conflict,
      });
    });

    it("lets the method's own errors through: an HttpException keeps its status, others are 500", async () => {
      expect(await request('GET', '/orders/5/missing')).toEqual({
        status: 404,
        body: { statusCode: 404, error: 'Not Found', message: 'order 5 not found' },
      });
      expect(await request('GET', '/orders/5/broken')).toEqual({
        status: 500,
        body: { statusCode: 500, message: 'Internal server error' },
      });
      expect(await locks.isLocked('order:5')).toBe(false);
    });
  });

  describe('@WithRequestLock', () => {
    it('locks on a key from the request and releases before the response is sent', async () => {
      let lockedInside = false;
      probe.hook = async () => {
        lockedInside = await locks.isLocked('order:10');
      };
      expect(await request('POST', '/orders/10/ship')).toEqual({ status: 201, body: { id: '10', key: 'order:10' } });
      expect(lockedInside).toBe(true);
      // No wait needed: the release finished before the response was written.
      expect(await locks.isLocked('order:10')).toBe(false);
    });

    it('answers 409 Conflict when the lock is taken', async () => {
      expect(await whileHeld('order:11', () => request('POST', '/orders/11/ship'))).toEqual({
        status: 409,
        body: conflict,
      });
    });

    it('serializes two requests on one key: the second one is refused while the first is inside', async () => {
      let second: { status: number } | undefined;
      probe.hook = async () => {
        second = await request('POST', '/orders/12/ship');
      };
      const first = await request('POST', '/orders/12/ship');
      expect(first.status).toBe(201);
      expect(second?.status).toBe(409);
    });

    it('takes the key from a function of the request', async () => {
      const headers = { 'x-tenant': 'acme' };
      expect(await request('POST', '/orders/by-tenant', { headers })).toEqual({
        status: 201,
        body: { key: 'tenant:acme' },
      });
      expect(await whileHeld('tenant:acme', () => request('POST', '/orders/by-tenant', { headers }))).toMatchObject({
        status: 409,
      });
    });

    it('answers 400 Bad Request when the request lacks the value of the key', async () => {
      const json = { 'content-type': 'application/json' };
      expect(await request('POST', '/orders/carts', { headers: json, body: '{"cartId":"c1"}' })).toEqual({
        status: 201,
        body: { key: 'cart:c1' },
      });
      const answer = await request('POST', '/orders/carts', { headers: json, body: '{}' });
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'UNRESOLVED_LOCK_KEY' });
      expect(answer.body.message).toContain('placeholder <body.cartId> in "cart:<body.cartId>" is undefined');
    });

    it('on a controller locks every route, and a method declaration overrides it', async () => {
      const headers = { 'x-tenant': 't1' };
      expect(await request('POST', '/reports', { headers })).toEqual({ status: 201, body: { key: 'tenant:t1' } });
      expect(await request('POST', '/reports/shared', { headers })).toEqual({
        status: 201,
        body: { key: 'reports:shared' },
      });
    });

    it('with @WithLock on the same key holds the lock once', async () => {
      let owners: Record<string, string> = {};
      probe.hook = async () => {
        owners = await redis.hgetall(ownersKey(keyPrefix, 'order:13'));
      };
      expect(await request('POST', '/orders/13/both')).toEqual({ status: 201, body: { id: '13', key: 'order:13' } });
      // One owner, held once: its count field and the field of its one hold ('<owner>/<n>').
      expect(Object.values(owners)).toEqual(['1', '1']);
      expect(Object.keys(owners).filter((field) => field.includes('/'))).toHaveLength(1);
      expect(await locks.isLocked('order:13')).toBe(false);
    });

    it('is taken once when RequestLockInterceptor is also listed with @UseInterceptors', async () => {
      let owners: Record<string, string> = {};
      probe.hook = async () => {
        owners = await redis.hgetall(ownersKey(keyPrefix, 'order:14'));
      };
      expect(await request('POST', '/explicit/14')).toEqual({ status: 201, body: { key: 'order:14' } });
      // One owner, held once: its count field and the field of its one hold ('<owner>/<n>').
      expect(Object.values(owners)).toEqual(['1', '1']);
      expect(Object.keys(owners).filter((field) => field.includes('/'))).toHaveLength(1);
      expect(await whileHeld('order:14', () => request('POST', '/explicit/14'))).toEqual({ status: 409, body: conflict });
    });
  });

  describe('with syncReplicas on a Redis that has no replica', () => {
    let strict: Awaited<ReturnType<typeof startHttpApp>>;
    beforeAll(async () => {
      strict = await startHttpApp({ lock: { syncReplicas: { replicas: 1, timeout: 20 } } });
    });
    afterAll(() => strict.app.close());

    it('answers 503 with LOCK_NOT_REPLICATED, and the unconfirmed lock is released', async () => {
      const response = await fetch(`${strict.baseUrl}/orders/30/pay`, { method: 'POST' });
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        code: 'LOCK_NOT_REPLICATED',
        message: 'The lock could not be confirmed by Redis replicas (failover or replication lag). Retry later.',
      });
      expect(await strict.locks.isLocked('order:30')).toBe(false);
    });
  });
});
