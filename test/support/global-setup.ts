import { provideTestRedis, type TestRedis } from './redis-for-tests';

declare global {
  // eslint-disable-next-line no-var
  var __TEST_REDIS__: TestRedis | undefined;
}

/** Starts the run's Redis once; workers inherit its URL through the environment. */
export default async function globalSetup(): Promise<void> {
  const redis = await provideTestRedis();
  globalThis.__TEST_REDIS__ = redis;
  process.env.REDIS_URL = redis.url;
  process.env.TEST_REDIS_SOURCE = redis.source;
  console.log(`\nTests use Redis at ${redis.url} (${redis.source}).`);
}
