import type { INestApplicationContext } from '@nestjs/common';
import { RedlockMasters } from '../lock/redlock/redlock-masters.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { openIoredisScratch } from '../core/redis/ioredis-maintenance.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { scanKeys } from '../core/redis/scan-keys.js';
import type { ScratchConnection } from '../core/redis/redis-transport.js';
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
  const { keyPrefix, openScratches } = redisLockModuleOf(app);
  // Opened before the module closes its own; they connect while it shuts down.
  const copies = openScratches();
  try {
    await app.close();
    await Promise.all(copies.map((copy) => removeKeysUnderPrefix(copy, keyPrefix))).catch((error: unknown) => {
      throw new TestKeysNotRemovedError(keyPrefix, error);
    });
  } finally {
    await Promise.all(copies.map((copy) => copy.close()));
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
  const { keyPrefix, live } = redisLockModuleOf(app);
  try {
    const counts = await Promise.all(live.map((connection) => removeKeysUnderPrefix(connection, keyPrefix)));
    return counts.reduce((sum, count) => sum + count, 0);
  } catch (error) {
    throw new TestKeysNotRemovedError(keyPrefix, error);
  }
}

/** Every Redis a module writes to (its connection, and the Redlock masters in Redlock mode), and its key prefix. */
interface ModuleServers {
  readonly keyPrefix: string;
  /** The module's own connections, for use while it runs. */
  readonly live: Array<Pick<ScratchConnection, 'scanKeys' | 'command'>>;
  /** Connections of their own to the same servers, that outlive the module's. */
  openScratches(): ScratchConnection[];
}

function redisLockModuleOf(app: Pick<INestApplicationContext, 'get'>): ModuleServers {
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
  const masters = redlock.masters.map((master) => master.client);
  return {
    keyPrefix: config.keyPrefix,
    live: [
      connection,
      ...masters.map((client) => ({
        scanKeys: (pattern: string, maxKeys: number, maxCalls?: number) => scanKeys(client, pattern, maxKeys, maxCalls),
        command: <T>(name: string, ...args: Array<string | number>) => client.call(name, ...args) as Promise<T>,
      })),
    ],
    openScratches: () => [connection.openScratch(), ...masters.map(openIoredisScratch)],
  };
}
