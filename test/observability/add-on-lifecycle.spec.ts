import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { RedisLockDashboardModule } from 'nestjs-redis-lock/dashboard';
import { RedisLockHealthModule } from 'nestjs-redis-lock/health';
import { RedisLockModule } from '../../lib/index.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';

/**
 * The health and dashboard add-ons reach the module's connection and inspectors through its
 * internals token, and must not make Nest run those objects' lifecycle hooks once more: the
 * connection's bootstrap checks (reachability, eviction policy) and its close run once per
 * application, however many add-ons are imported.
 */
describe('add-on modules and the lifecycle of the pieces they read', () => {
  let server: LocalRedisServer;

  beforeAll(async () => {
    server = await startLocalRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
    jest.restoreAllMocks();
  });

  async function hookRuns(addOns: boolean): Promise<{ init: number; destroy: number; shutdown: number }> {
    const init = jest.spyOn(RedisConnection.prototype, 'onModuleInit');
    const destroy = jest.spyOn(RedisConnection.prototype, 'onModuleDestroy');
    const shutdown = jest.spyOn(RedisConnection.prototype, 'onApplicationShutdown');
    try {
      const app = await Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({ redis: server.url, keyPrefix: uniquePrefix('addons'), isGlobal: true }),
          ...(addOns ? [RedisLockHealthModule, RedisLockDashboardModule.forRoot()] : []),
        ],
      }).compile();
      await app.init();
      await app.close();
      return { init: init.mock.calls.length, destroy: destroy.mock.calls.length, shutdown: shutdown.mock.calls.length };
    } finally {
      init.mockRestore();
      destroy.mockRestore();
      shutdown.mockRestore();
    }
  }

  it('runs the connection’s hooks once with the health and dashboard modules imported, as without them', async () => {
    const alone = await hookRuns(false);
    expect(alone).toEqual({ init: 1, destroy: 1, shutdown: 1 });
    expect(await hookRuns(true)).toEqual(alone);
  });
});
