import type { INestApplicationContext } from '@nestjs/common';
import { Cluster, type Redis } from 'ioredis';
import { RedlockMasters } from '../lock/redlock/redlock-masters.js';
import { REDIS_LOCK_CONFIG, type RedisClient, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { closeQuietly } from '../core/redis/close-quietly.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { removeKeysUnderPrefix } from './remove-keys-under-prefix.js';
import { TestKeysNotRemovedError } from './test-keys-not-removed.error.js';

/**
 * A compiled testing module or an app made from one: what `closeRedisLockTestingModule` closes.
 *
 * @inline
 */
export type RedisLockTestingApp = Pick<INestApplicationContext, 'get' | 'close'>;

/**
 * Options of {@link closeRedisLockTestingModule}.
 *
 * @example
 * await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
 */
export interface CloseRedisLockTestingModuleOptions {
  /**
   * Also delete every key the module wrote under its key prefix (locks, fencing counters, jobs,
   * dead letters), once it is closed. Default false: a server you stop after the tests takes
   * its keys with it, and a shared `REDIS_URL` server keeps them to look at after a failure.
   */
  removeKeys?: boolean;
}

/** How long one command of the key removal may take before it fails. */
const REMOVAL_COMMAND_TIMEOUT_MS = 5_000;

/**
 * Closes a testing module (or the app created from it) that has `RedisLockModule`: running
 * handlers drain, the module's connections close. Locks still held are not released (their holder
 * may still be running): the watchdog stops renewing them and each one's lease frees it (module
 * `lock.leaseTime`, 30 s by default; give tests a shorter one). Release them in your code, or take
 * them with `using()` / `@WithLock`, which release when the section ends. With
 * `removeKeys`, the keys under the module's prefix are deleted afterwards, on fresh connections,
 * so nothing written during shutdown is left behind; if Redis cannot be reached for that, it
 * rejects with `TestKeysNotRemovedError` (the module is closed all the same).
 *
 * It does not stop the Redis server: call `stop()` on what `startTestRedis()` returned.
 *
 * @example
 * import { closeRedisLockTestingModule, initRedisLockTestingModule, startTestRedis, type TestRedis } from 'nestjs-redis-lock/testing';
 * import type { TestingModule } from '@nestjs/testing';
 *
 * let redis: TestRedis;
 * let moduleRef: TestingModule;
 * beforeAll(async () => (redis = await startTestRedis()));
 * beforeEach(async () => (moduleRef = await initRedisLockTestingModule({ redis, providers: [OrdersService] })));
 * afterEach(() => closeRedisLockTestingModule(moduleRef, { removeKeys: true }));
 * afterAll(() => redis.stop());
 */
export async function closeRedisLockTestingModule(
  app: RedisLockTestingApp,
  options: CloseRedisLockTestingModuleOptions = {},
): Promise<void> {
  if (!options.removeKeys) {
    await app.close();
    return;
  }
  const { keyPrefix, clients } = redisLockModuleOf(app);
  // Opened before the module closes its own; they connect while it shuts down.
  const copies = clients.map(independentCopyOf);
  try {
    await app.close();
    await Promise.all(copies.map((copy) => removeKeysUnderPrefix(copy, keyPrefix))).catch((error: unknown) => {
      throw new TestKeysNotRemovedError(keyPrefix, error);
    });
  } finally {
    await Promise.all(copies.map(closeQuietly));
  }
}

/**
 * Deletes every key under a running module's key prefix (locks, fencing counters, jobs, dead
 * letters) and resolves with how many were deleted: a clean slate between tests without
 * restarting the module. Run it when no lock is held and no job handler runs: a lock whose key
 * is deleted is free for the next caller (its holder learns it at the next renewal).
 *
 * @example
 * import { removeRedisLockKeys } from 'nestjs-redis-lock/testing';
 *
 * afterEach(() => removeRedisLockKeys(moduleRef));
 */
export async function removeRedisLockKeys(app: Pick<INestApplicationContext, 'get'>): Promise<number> {
  const { keyPrefix, clients } = redisLockModuleOf(app);
  try {
    const counts = await Promise.all(clients.map((client) => removeKeysUnderPrefix(client, keyPrefix)));
    return counts.reduce((sum, count) => sum + count, 0);
  } catch (error) {
    throw new TestKeysNotRemovedError(keyPrefix, error);
  }
}

/** The module's key prefix, and every Redis it writes to: its connection, and the Redlock masters in Redlock mode. */
function redisLockModuleOf(app: Pick<INestApplicationContext, 'get'>): { keyPrefix: string; clients: RedisClient[] } {
  let config: RedisLockConfig;
  let connection: RedisConnection;
  let redlock: RedlockMasters;
  try {
    config = app.get<RedisLockConfig>(REDIS_LOCK_CONFIG, { strict: false });
    connection = app.get(RedisConnection, { strict: false });
    redlock = app.get(RedlockMasters, { strict: false });
  } catch (error) {
    throw new Error(
      'This module has no RedisLockModule: build it with createRedisLockTestingModule() or import RedisLockModule.forRoot().',
      { cause: error },
    );
  }
  return { keyPrefix: config.keyPrefix, clients: [connection.client, ...redlock.masters.map((master) => master.client)] };
}

/**
 * A connection of its own to the same server(s), that connects now, queues commands until it is
 * ready, fails a command after a few seconds instead of waiting for a server that is gone, and
 * does not reconnect once the server is down.
 */
function independentCopyOf(client: RedisClient): RedisClient {
  const settings = { lazyConnect: false, enableOfflineQueue: true };
  const copy = duplicate(client, settings);
  // Its failures reach the caller through the commands' rejections; no "Unhandled error event" noise.
  copy.on('error', () => undefined);
  return copy;
}

function duplicate(client: RedisClient, settings: { lazyConnect: boolean; enableOfflineQueue: boolean }): RedisClient {
  if (client instanceof Cluster) {
    return client.duplicate([], {
      ...settings,
      clusterRetryStrategy: () => null,
      redisOptions: { ...client.options.redisOptions, commandTimeout: REMOVAL_COMMAND_TIMEOUT_MS },
    });
  }
  return (client as Redis).duplicate({
    ...settings,
    commandTimeout: REMOVAL_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
}
