import type { TestingModule } from '@nestjs/testing';
import { InvalidOptionsError, RedisConnectionError, type RedisConnectionOptions } from '../../../lib/index.js';
import { initRedisLockTestingModule, uniqueKeyPrefix } from '../../../lib/testing/index.js';
import { failOnUnhandledRejections } from '../../support/fail-on-unhandled-rejections.js';
import { useLocalRedisServer } from '../../support/use-local-redis-server.js';

/*
 * Review of issue 38: `redis` options of the wrong shape for the named driver. Each must be refused
 * at bootstrap with InvalidOptionsError naming the key (the contract: unknown option keys fail at
 * bootstrap), never silently ignored so that the module connects to localhost:6379 instead of the
 * server the app named.
 */

failOnUnhandledRejections();

async function bootstrapError(redis: RedisConnectionOptions): Promise<unknown> {
  let app: TestingModule | undefined;
  try {
    app = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix: uniqueKeyPrefix('r38'), connectTimeout: 1_500 } as never });
    return undefined;
  } catch (error) {
    if (process.env.R38_DEBUG) console.log(String((error as Error)?.message));
    return error;
  } finally {
    await app?.close();
  }
}

describe("review-38: redis options of another driver's shape", () => {
  const server = useLocalRedisServer();

  it("{ driver: 'node-redis', host, port } (ioredis-shaped) is refused naming redis.host", async () => {
    const error = await bootstrapError({ driver: 'node-redis', host: '127.0.0.1', port: server.port } as never);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect(String((error as Error)?.message)).toMatch(/redis\.host/);
  });

  it("{ driver: 'node-redis', cluster: [...] } (iovalkey-shaped cluster) is refused naming redis.cluster", async () => {
    const error = await bootstrapError({ driver: 'node-redis', cluster: [{ host: '127.0.0.1', port: server.port }] } as never);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect(String((error as Error)?.message)).toMatch(/redis\.cluster/);
  });

  it("{ driver: 'valkey-glide', host, port } is refused naming redis.host", async () => {
    const error = await bootstrapError({ driver: 'valkey-glide', host: '127.0.0.1', port: server.port } as never);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect(String((error as Error)?.message)).toMatch(/redis\.host/);
  });

  it("{ driver: 'valkey-glide', url, rootNodes } (node-redis cluster shape) is refused naming redis.rootNodes", async () => {
    const error = await bootstrapError({ driver: 'valkey-glide', url: server.url, rootNodes: [{ url: server.url }] } as never);
    expect(error).toBeInstanceOf(InvalidOptionsError);
  });

  it("{ driver: 'nodeRedis' } (unknown driver) is refused naming redis.driver", async () => {
    const error = await bootstrapError({ driver: 'nodeRedis', url: server.url } as never);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect(String((error as Error)?.message)).toMatch(/redis\.driver/);
  });

  it('{ client: {} } (not a client) is refused naming redis.client', async () => {
    const error = await bootstrapError({ client: {} } as never);
    expect(error).toBeInstanceOf(InvalidOptionsError);
  });
});

describe('review-38: a wrong password', () => {
  const server = useLocalRedisServer({ args: ['--requirepass', 's3cret'] });
  for (const driver of ['node-redis', 'valkey-glide'] as const) {
    it(`${driver}: bootstrap fails with RedisConnectionError naming the auth failure`, async () => {
      const error = await bootstrapError({ driver, url: `redis://default:nope@127.0.0.1:${server.port}` } as never);
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect(String((error as Error).message)).toMatch(/WRONGPASS|auth|password/i);
    });
  }
});
