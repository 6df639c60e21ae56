import type { Provider, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, RedisLockModule, type RedisLockModuleOptions } from '../../../lib/index.js';
import { initOrCloseConnections, testRedisUrl, uniquePrefix } from '../../support/test-app.js';

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
    imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), ...options, keyPrefix })],
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
