import { DelayQueueService, LockService, RedisConnectionError } from '../../lib/index.js';
import { startLocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { compileLockModule } from '../support/module-startup.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';

/** Generous for a loaded machine; the old behaviour took 10-18 s (connectTimeout, then the retry budget). */
const BOUND_MS = 4_000;

failOnUnhandledRejections({ after: 'each' });

/**
 * A connection that cannot work says why, at bootstrap and when a call needs it: the message names
 * the real cause (the server's WRONGPASS / NOAUTH, the socket's ECONNREFUSED, the resolver's
 * ENOTFOUND), not ioredis' "Connection is closed." that every one of them used to end as.
 */
describe('a connection error names its cause', () => {
  const server = useLocalRedisServer({ args: ['--requirepass', 'right-password'] });
  let closedPort: number;

  beforeAll(async () => {
    const stopped = await startLocalRedisServer();
    closedPort = stopped.port;
    await stopped.stop();
  });

  const cases: Array<[string, () => string, RegExp]> = [
    ['a closed port', () => `redis://127.0.0.1:${closedPort}`, /ECONNREFUSED/],
    ['an unknown host', () => 'redis://no-such-host.invalid:6379', /ENOTFOUND/],
    ['a wrong password', () => `redis://:wrong-password@127.0.0.1:${server.port}`, /WRONGPASS/],
    ['a missing password', () => `redis://127.0.0.1:${server.port}`, /NOAUTH/],
  ];

  describe.each(cases)('%s', (_label, url, cause) => {
    it('bootstrap fails fast with RedisConnectionError naming the cause, and no password', async () => {
      const app = await compileLockModule({ redis: url(), keyPrefix: uniquePrefix('cause') });
      const started = performance.now();
      const error = await app.init().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect((error as Error).message).toMatch(cause);
      expect((error as Error).message).not.toMatch(/Connection is closed/);
      expect((error as Error).message).not.toContain('password@');
      expect(performance.now() - started).toBeLessThan(BOUND_MS);
    });

    it('a call (bootstrap check off) fails fast with RedisConnectionError naming the cause', async () => {
      const app = await compileLockModule({ redis: url(), keyPrefix: uniquePrefix('cause'), connectTimeout: 0 });
      await app.init();
      try {
        const started = performance.now();
        const errors = await Promise.all([
          app
            .get(LockService)
            .tryAcquire('k')
            .catch((e: unknown) => e),
          app
            .get(DelayQueueService)
            .schedule('cause.topic', 1)
            .catch((e: unknown) => e),
        ]);
        const elapsed = performance.now() - started;
        for (const error of errors) {
          expect(error).toBeInstanceOf(RedisConnectionError);
          expect((error as Error).message).toMatch(cause);
          expect((error as Error).message).not.toContain('wrong-password');
        }
        expect(elapsed).toBeLessThan(BOUND_MS);
      } finally {
        await app.close();
      }
    });
  });
});
