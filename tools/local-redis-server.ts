/**
 * Private `redis-server` processes on loopback for the test harness, the benchmarks and the sample
 * app (when no REDIS_URL is configured). The code is published in `nestjs-redis-lock/testing`
 * (lib/testing/local-redis-server.ts); this module keeps the names the repository's tools use.
 */
export {
  findFreePort,
  findFreePort as freePort,
  hasRedisServerBinary,
  startLocalRedisServer,
  type LocalRedisServer,
  type LocalRedisServerOptions,
  type LocalRedisServerOptions as LocalRedisOptions,
} from '../lib/testing/local-redis-server.js';
