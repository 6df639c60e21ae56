import { Redis } from 'ioredis';
import type { Consumer } from '../../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../../lib/testing/local-redis-server.js';
import { waitFor } from '../../support/timing.js';
import { readThrough } from '../../support/use-resource.js';
import type { DelayTestApp } from './delay-test-app.js';

/** A redis-server of each test's own (restarted, killed or emptied by the test), and the instances the test runs on it. */
export interface OwnRedisPerTest {
  /** Starts this test's server (`args`: its extra command line; none for a server without persistence). */
  start(args?: string[]): Promise<LocalRedisServer>;
  /** This test's server, read through. */
  readonly server: LocalRedisServer;
  /** A plain client of the server, read through: its commands fail at once while the server is down, and it reconnects every 50 ms. */
  readonly redis: Redis;
  /** The instances the test pushes here: closed after it (see `useOwnRedisPerTest`). */
  readonly apps: DelayTestApp[];
  /** The consumers the test pushes here: closed after it, before the apps. */
  readonly consumers: Consumer[];
  /** The server's clock, in ms; rejects while it is down. */
  now(): Promise<number>;
  /** The server's clock once it answers again (after a restart), waited for up to 30 s. */
  answering(): Promise<number>;
}

/**
 * A private redis-server per test (`start`). After each test the consumers close, then the apps (their
 * errors ignored: the test may have left Redis down), then the client, then the server.
 */
export function useOwnRedisPerTest(): OwnRedisPerTest {
  let started: { server: LocalRedisServer; redis: Redis } | undefined;
  const apps: DelayTestApp[] = [];
  const consumers: Consumer[] = [];
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close().catch(() => undefined)));
    await Promise.all(apps.splice(0).map((app) => app.close().catch(() => undefined)));
    if (!started) return;
    const { server, redis } = started;
    started = undefined;
    redis.disconnect();
    await server.stop();
  });
  const redis = readThrough('the test’s Redis client', () => started?.redis);
  const now = async (): Promise<number> => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  return {
    async start(args = []) {
      const server = await startLocalRedisServer({ args });
      started = { server, redis: new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 }) };
      return server;
    },
    server: readThrough('the test’s Redis server', () => started?.server),
    redis,
    apps,
    consumers,
    now,
    answering: () => waitFor(() => now().catch(() => false as const), 30_000, 'Redis to answer again'),
  };
}
