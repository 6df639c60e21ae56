import { Redis } from 'ioredis';
import { RedisConnectionError, type RedisLockModuleOptions } from '../../lib/index.js';
import { uniquePrefix } from '../support/test-app.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { compileLockModule } from '../support/module-startup.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';

failOnUnhandledRejections({ after: 'each' });

/**
 * A database index the server refuses (`SELECT 99` with the default 16 databases) fails the
 * bootstrap like a wrong password does, instead of a warning and every key written to DB 0.
 */
describe('a database index Redis refuses', () => {
  const server = useLocalRedisServer();

  it.each([
    ['in the URL', () => ({ redis: `redis://127.0.0.1:${server.port}/99` })],
    ['in the options', () => ({ redis: { host: '127.0.0.1', port: server.port, db: 99 } })],
  ])('%s: bootstrap fails with RedisConnectionError naming the db and the cause', async (_label, options) => {
    const app = await compileLockModule({ keyPrefix: uniquePrefix('db'), ...(options() as RedisLockModuleOptions) });
    const error = await app.init().catch((e: unknown) => e);
    await app.close().catch(() => undefined);
    expect(error).toBeInstanceOf(RedisConnectionError);
    expect((error as Error).message).toMatch(/database 99/);
    expect((error as Error).message).toMatch(/DB index is out of range/);
  });

  it('a client passed in that already failed its SELECT is refused too', async () => {
    const client = new Redis({ host: '127.0.0.1', port: server.port, db: 99, lazyConnect: true });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const app = await compileLockModule({ redis: { client }, keyPrefix: uniquePrefix('db') });
      const error = await app.init().catch((e: unknown) => e);
      await app.close().catch(() => undefined);
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect((error as Error).message).toMatch(/database 99/);
    } finally {
      client.disconnect();
    }
  });

  it('a database in range boots', async () => {
    const app = await compileLockModule({ redis: `redis://127.0.0.1:${server.port}/3`, keyPrefix: uniquePrefix('db') });
    await app.init();
    await app.close();
  });
});
