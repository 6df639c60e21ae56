import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { createLockApp, testRedisUrl, uniquePrefix } from './test-app.js';
import { readThrough } from './use-resource.js';

/** Two lock services on one key prefix: one through a fault proxy, the other straight to Redis. */
export interface ProxiedLockPair {
  readonly keyPrefix: string;
  /** The fault proxy between `a` and Redis, read through (`readThrough`). */
  readonly proxy: FaultProxy;
  /** Service whose connection goes through the fault proxy (its logger off), read through. */
  readonly a: LockService;
  /** Another process on the same keys, straight to Redis, read through. */
  readonly b: LockService;
}

/**
 * Starts a fault proxy in front of the run's Redis and the two apps of a `ProxiedLockPair` before a
 * describe block's tests; after them, closes the apps, then stops the proxy.
 */
export function useProxiedLockPair(label: string): ProxiedLockPair {
  const keyPrefix = uniquePrefix(label);
  let started: { proxy: FaultProxy; viaProxy?: TestingModule; direct?: TestingModule } | undefined;
  beforeAll(async () => {
    started = { proxy: await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) }) };
    started.viaProxy = await createLockApp({ redis: started.proxy.url, keyPrefix });
    started.viaProxy.useLogger(false);
    started.direct = await createLockApp({ keyPrefix });
  });
  afterAll(async () => {
    await started?.viaProxy?.close();
    await started?.direct?.close();
    await started?.proxy.stop();
  });
  return {
    keyPrefix,
    proxy: readThrough('the fault proxy', () => started?.proxy),
    a: readThrough('the proxied lock service', () => started?.viaProxy?.get(LockService)),
    b: readThrough('the direct lock service', () => started?.direct?.get(LockService)),
  };
}
