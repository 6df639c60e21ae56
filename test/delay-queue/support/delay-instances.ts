import type { Redis } from 'ioredis';
import { rawRedis, uniquePrefix } from '../../support/test-app.js';
import { muteNestLogger } from '../../support/mute-nest-logger.js';
import { UnhandledRejections } from '../../support/unhandled-rejections.js';
import { createDelayApp, type DelayTestApp } from './delay-test-app.js';

/** What `useDelayInstances` gives a describe block. */
export interface DelayInstances {
  /** `n` applications sharing one key prefix (instances of one service), closed after the block. */
  start(n: number, options?: Parameters<typeof createDelayApp>[0]): Promise<DelayTestApp[]>;
  /** A plain client to look at the keys from outside (open during the block). */
  redis(): Redis;
}

/**
 * Instances of a service for the specs of one describe block: each `start()` gets a fresh key
 * prefix unless the options name one; every application is closed after the block, error logs are
 * muted, and the block fails if any promise rejection went unhandled.
 */
export function useDelayInstances(label: string): DelayInstances {
  const unhandled = new UnhandledRejections();
  const apps: DelayTestApp[] = [];
  let redis: Redis | undefined;
  beforeAll(() => {
    muteNestLogger('error');
    unhandled.start();
    redis = rawRedis();
  });
  afterAll(async () => {
    await Promise.all(apps.map((t) => t.close()));
    redis?.disconnect();
    unhandled.stop();
    expect(unhandled.reasons).toEqual([]);
  });
  return {
    async start(n, options = {}) {
      const keyPrefix = options.keyPrefix ?? uniquePrefix(label);
      const started = await Promise.all(Array.from({ length: n }, () => createDelayApp({ ...options, keyPrefix })));
      apps.push(...started);
      return started;
    },
    redis: () => redis!,
  };
}
