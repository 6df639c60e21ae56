import { existsSync } from 'node:fs';
// From the files, not lib/testing/index.ts: global setup runs in Jest's own process and needs no Nest.
import { startTestRedis, type TestRedis as PublishedTestRedis } from '../../lib/testing/start-test-redis.js';
import { TestRedisUnavailableError } from '../../lib/testing/test-redis-unavailable.error.js';

/** A Redis server for the test run and how to let go of it. */
export interface TestRedis {
  readonly url: string;
  readonly source: PublishedTestRedis['source'] | 'testcontainers';
  stop(): Promise<void>;
}

export const NO_REDIS_MESSAGE = [
  'The tests need a real Redis server, and none was found. Any one of these works:',
  '  - set REDIS_URL=redis://host:port to a server you run (a spare database: tests write keys under their own prefixes);',
  '  - run a Docker engine (the tests then start redis:7-alpine with testcontainers);',
  '  - install redis-server on PATH: `sudo apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS).',
].join('\n');

/**
 * Picks the Redis for the run: `REDIS_URL` if set, else a testcontainers container when a Docker
 * engine answers, else `redis-server` from PATH on a free loopback port. Never falls back to a fake:
 * with none of them the run fails with `NO_REDIS_MESSAGE`.
 *
 * The first and last come from the published `nestjs-redis-lock/testing` (`startTestRedis`), so the
 * whole suite runs on it; testcontainers is this repository's own extra (a dev dependency).
 */
export async function provideTestRedis(): Promise<TestRedis> {
  if (process.env.REDIS_URL) return startTestRedis();
  if (dockerMayBeReachable()) {
    const container = await startContainer();
    if (container) return container;
  }
  try {
    return await startTestRedis();
  } catch (error) {
    if (error instanceof TestRedisUnavailableError) throw new Error(NO_REDIS_MESSAGE, { cause: error });
    throw error;
  }
}

function dockerMayBeReachable(): boolean {
  if (process.env.TESTCONTAINERS_DISABLED === 'true') return false;
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function startContainer(): Promise<TestRedis | undefined> {
  try {
    const { GenericContainer, Wait } = await import('testcontainers');
    const container = await new GenericContainer('redis:7-alpine')
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start();
    return {
      url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`,
      source: 'testcontainers',
      stop: async () => {
        await container.stop();
      },
    };
  } catch (error) {
    // A socket that does not answer, or an engine that cannot pull: try the next source.
    console.warn(`testcontainers could not start Redis (${(error as Error).message}); trying redis-server on PATH.`);
    return undefined;
  }
}
