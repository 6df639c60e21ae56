import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { RedisConnectionError, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

async function compileApp(options: RedisLockModuleOptions): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ keyPrefix: uniquePrefix('db'), ...options })],
  }).compile();
  moduleRef.useLogger(false);
  return moduleRef;
}

failOnUnhandledRejections({ after: 'each' });

/**
 * A database index the server refuses (`SELECT 99` with the default 16 databases) fails the
 * bootstrap like a wrong password does, instead of a warning and every key written to DB 0.
 */
describe('a database index Redis refuses', () => {
  let server: LocalRedisServer;

  beforeAll(async () => {
    server = await startLocalRedisServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it.each([
    ['in the URL', () => ({ redis: `redis://127.0.0.1:${server.port}/99` })],
    ['in the options', () => ({ redis: { host: '127.0.0.1', port: server.port, db: 99 } })],
  ])('%s: bootstrap fails with RedisConnectionError naming the db and the cause', async (_label, options) => {
    const app = await compileApp(options() as RedisLockModuleOptions);
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
      const app = await compileApp({ redis: { client } });
      const error = await app.init().catch((e: unknown) => e);
      await app.close().catch(() => undefined);
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect((error as Error).message).toMatch(/database 99/);
    } finally {
      client.disconnect();
    }
  });

  it('a database in range boots', async () => {
    const app = await compileApp({ redis: `redis://127.0.0.1:${server.port}/3` });
    await app.init();
    await app.close();
  });
});
