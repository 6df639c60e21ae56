import { redisOptionFor } from '../../support/test-driver.js';
import type { Provider, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, RedisLockModule, type Consumer, type RedisLockModuleOptions } from '../../../lib/index.js';
import { initOrCloseConnections, testRedisUrl, uniquePrefix } from '../../support/test-app.js';
import { useResource } from '../../support/use-resource.js';

export interface DelayTestApp {
  readonly app: TestingModule;
  readonly queue: DelayQueueService;
  readonly keyPrefix: string;
  close(): Promise<void>;
}

/**
 * A Nest testing module with RedisLockModule (and optional extra providers, e.g. @OnDelayed handler
 * classes), initialised. Pass `keyPrefix` to let several apps share one queue, as separate processes would.
 */
export async function createDelayApp(
  options: RedisLockModuleOptions = {},
  providers: Array<Provider | Type<unknown>> = [],
): Promise<DelayTestApp> {
  const keyPrefix = options.keyPrefix ?? uniquePrefix('dq');
  const app = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: redisOptionFor(testRedisUrl()), ...options, keyPrefix })],
    providers,
  }).compile();
  await initOrCloseConnections(app);
  let closed = false;
  return {
    app,
    queue: app.get(DelayQueueService),
    keyPrefix,
    close: async () => {
      if (closed) return;
      closed = true;
      await app.close();
    },
  };
}

/**
 * A delay app for a describe block (`createDelayApp` through `useResource`): started before its
 * tests, closed after them. `options` may be a function, called in the hook, to read what earlier
 * hooks made (another app's key prefix, a server's URL).
 */
export function useDelayApp(
  options: RedisLockModuleOptions | (() => RedisLockModuleOptions) = {},
  providers: Array<Provider | Type<unknown>> = [],
): DelayTestApp {
  return useResource(
    'the delay app',
    () => createDelayApp(typeof options === 'function' ? options() : options, providers),
    (t) => t.close(),
  );
}

/** The consumers and apps a test of the block pushes here are closed after it, consumers first. */
export function useClosedAfterEach(): { readonly consumers: Consumer[]; readonly apps: DelayTestApp[] } {
  const consumers: Consumer[] = [];
  const apps: DelayTestApp[] = [];
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  return { consumers, apps };
}
