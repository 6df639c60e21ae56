import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, LockService, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { LEASE_MS, WAIT_TIMEOUT_MS, type LockContender } from './lock-contenders.js';

/** The drivers the module speaks through (`redis.driver`), in the order the report lists them. */
export const BENCH_DRIVERS = ['ioredis', 'iovalkey', 'node-redis', 'valkey-glide'] as const;
export type BenchDriver = (typeof BENCH_DRIVERS)[number];

/** The npm package behind each driver, for the report's versions line. */
export const DRIVER_PACKAGE: Readonly<Record<BenchDriver, string>> = {
  ioredis: 'ioredis',
  iovalkey: 'iovalkey',
  'node-redis': 'redis',
  'valkey-glide': '@valkey/valkey-glide',
};

/** The drivers redlock-universal has an adapter for (it has none for iovalkey). */
export const PEER_DRIVERS = ['ioredis', 'node-redis', 'valkey-glide'] as const;
export type PeerDriver = (typeof PEER_DRIVERS)[number];

/**
 * redlock-universal's retry settings on a contended key: its defaults (3 attempts, 100 ms apart) give
 * up within 300 ms, so most of 32 callers on one key would fail; these poll every 10 ms for up to
 * `WAIT_TIMEOUT_MS`, as the other polling peers of the lock benches do.
 */
export const PEER_RETRY = { retryAttempts: Math.ceil(WAIT_TIMEOUT_MS / 10), retryDelay: 10 } as const;

/** This library on one driver: a Nest application context built the way an application builds it. */
export interface OurDriverApp {
  readonly driver: BenchDriver;
  /** `LockService.acquire(key, { leaseTime, waitTimeout })`: a fixed lease, waiting woken by pub/sub. */
  readonly lock: LockContender;
  readonly queue: DelayQueueService;
  close(): Promise<void>;
}

/** A contender that could not start on this machine (its driver not supported yet, a package missing): the report says why. */
export interface Unavailable {
  readonly unavailable: string;
}

export const isUnavailable = (value: object): value is Unavailable => 'unavailable' in value;

const reason = (error: unknown) => String((error as Error)?.message ?? error).split('\n')[0];

/**
 * `RedisLockModule.forRoot({ redis: { driver, url }, keyPrefix })`, the public option alone. A
 * driver the module refuses at bootstrap comes back as `Unavailable` with the module's own message,
 * and the run goes on (`abortOnError: false`: Nest would otherwise exit the process).
 */
export async function openOurDriver(driver: BenchDriver, url: string, keyPrefix: string): Promise<OurDriverApp | Unavailable> {
  let app: INestApplicationContext;
  try {
    const redis = { driver, url } as RedisLockModuleOptions['redis'];
    app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis, keyPrefix }), {
      logger: false,
      abortOnError: false,
    });
  } catch (error) {
    return { unavailable: reason(error) };
  }
  const locks = app.get(LockService);
  const options = { leaseTime: LEASE_MS, waitTimeout: WAIT_TIMEOUT_MS };
  return {
    driver,
    lock: {
      name: `ours on ${driver}`,
      settings: `LockService.acquire(key, { leaseTime: ${LEASE_MS}, waitTimeout: ${WAIT_TIMEOUT_MS} }): fixed lease, waits on pub/sub`,
      async acquire(key) {
        const handle = await locks.acquire(key, options);
        return () => handle.release();
      },
      // The application context is closed by `close()` below, once every scenario ran.
      close: async () => undefined,
    },
    queue: app.get(DelayQueueService),
    close: () => app.close(),
  };
}

/** A connected client of `driver` and redlock-universal's adapter around it. */
interface PeerConnection {
  readonly adapter: unknown;
  close(): Promise<void>;
}

/** One command connection per driver, as redlock-universal's README builds it. */
async function connectPeer(driver: PeerDriver, url: string): Promise<PeerConnection> {
  const universal = await import('redlock-universal');
  switch (driver) {
    case 'ioredis': {
      const { Redis } = await import('ioredis');
      const client = new Redis(url);
      return { adapter: new universal.IoredisAdapter(client), close: async () => void (await client.quit()) };
    }
    case 'node-redis': {
      const { createClient } = await import('redis');
      const client = createClient({ url });
      await client.connect();
      return { adapter: new universal.NodeRedisAdapter(client), close: () => client.close() };
    }
    case 'valkey-glide': {
      const { GlideClient } = await import('@valkey/valkey-glide');
      const { hostname, port } = new URL(url);
      const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port || 6379) }] });
      return { adapter: new universal.GlideAdapter(client), close: async () => client.close() };
    }
  }
}

/**
 * redlock-universal 0.8.5 on one client of `driver`: `createLock({ adapter, key, ttl })` per acquire
 * (a lock object per resource, as its README shows), `lock.release(handle)` to let go; when the key
 * is held it retries per `PEER_RETRY`.
 */
export async function openPeer(driver: PeerDriver, url: string, keyPrefix: string): Promise<LockContender | Unavailable> {
  let connection: PeerConnection;
  try {
    connection = await connectPeer(driver, url);
  } catch (error) {
    return { unavailable: reason(error) };
  }
  const { createLock } = await import('redlock-universal');
  const adapter = connection.adapter as Parameters<typeof createLock>[0]['adapter'];
  return {
    name: `redlock-universal on ${driver}`,
    settings:
      `createLock({ adapter, key, ttl: ${LEASE_MS}, retryAttempts: ${PEER_RETRY.retryAttempts}, ` +
      `retryDelay: ${PEER_RETRY.retryDelay} }).acquire() / release(handle)`,
    async acquire(key) {
      const lock = createLock({ adapter, key: `${keyPrefix}:${key}`, ttl: LEASE_MS, ...PEER_RETRY });
      const handle = await lock.acquire();
      return () => lock.release(handle);
    },
    close: () => connection.close(),
  };
}
