import { hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer, type LocalRedisServerOptions } from './local-redis-server.js';
import { TestRedisUnavailableError } from './test-redis-unavailable.error.js';

/**
 * The Redis a test run uses, from {@link startTestRedis}. Pass it (or its `url`) to
 * `createRedisLockTestingModule({ redis })` and call `stop()` when the tests are done.
 *
 * @example
 * import { startTestRedis, type TestRedis } from 'nestjs-redis-lock/testing';
 *
 * let redis: TestRedis;
 * beforeAll(async () => (redis = await startTestRedis()));
 * afterAll(() => redis.stop());
 */
export interface TestRedis extends AsyncDisposable {
  /** Where it is, e.g. `redis://127.0.0.1:40123`. */
  readonly url: string;
  /** `'REDIS_URL'`: a server you run (never stopped here); `'redis-server'`: a private one started for this run. */
  readonly source: 'REDIS_URL' | 'redis-server';
  /** The private server (to `restart()` it in failure tests); undefined when the URL came from REDIS_URL. */
  readonly server?: LocalRedisServer;
  /** Stops the private server and removes its directory; does nothing to a server given by REDIS_URL. */
  stop(): Promise<void>;
}

/**
 * Options of {@link startTestRedis}.
 *
 * @example
 * await startTestRedis({ url: process.env.TEST_REDIS_URL });                 // your own variable
 * await startTestRedis({ redisServer: { args: ['--appendonly', 'yes'] } }); // private server's settings
 */
export interface StartTestRedisOptions {
  /** A server to use instead of starting one. Default: `process.env.REDIS_URL`. */
  url?: string;
  /** How to start the private `redis-server` when there is no URL. */
  redisServer?: LocalRedisServerOptions;
}

/**
 * Provides a Redis for a test run: the server at `REDIS_URL` when it is set, else a private
 * `redis-server` from PATH on a free loopback port, in a temporary directory. Never a fake: with
 * neither it rejects with `TestRedisUnavailableError`, whose message says how to get one.
 *
 * One server can serve every testing module of a run: each module writes under its own key prefix.
 * To share one across Jest workers, start it in `globalSetup` and put its URL in `REDIS_URL`; the
 * workers' `startTestRedis()` then use it (see docs/testing.md).
 *
 * @example
 * import { startTestRedis } from 'nestjs-redis-lock/testing';
 *
 * const redis = await startTestRedis();
 * console.log(`tests use ${redis.url} (${redis.source})`);
 * await redis.stop();
 */
export async function startTestRedis(options: StartTestRedisOptions = {}): Promise<TestRedis> {
  const url = options.url ?? process.env.REDIS_URL;
  if (url) {
    const leaveRunning = async () => undefined;
    return { url, source: 'REDIS_URL', stop: leaveRunning, [Symbol.asyncDispose]: leaveRunning };
  }
  if (!hasRedisServerBinary()) throw new TestRedisUnavailableError();
  const server = await startLocalRedisServer(options.redisServer);
  const stop = () => server.stop();
  return { url: server.url, source: 'redis-server', server, stop, [Symbol.asyncDispose]: stop };
}
