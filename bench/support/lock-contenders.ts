import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { Redlock } from '@sesamecare-oss/redlock';
import { Cluster, Redis, type ClusterNode } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { LockService, RedisLockModule, type AcquireOptions } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { coalesceWritesPerTick } from '../../lib/core/redis/coalesce-writes.js';
import { acquireLockScript } from '../../lib/lock/kinds/mutex/acquire-lock.lua.js';
import { releaseLockScript } from '../../lib/lock/kinds/mutex/release-lock.lua.js';
import { sleep } from './stats.js';

/** Where a contender connects: a Redis URL, or the nodes of a Redis Cluster. */
export type BenchTarget = string | { readonly cluster: readonly ClusterNode[] };

/**
 * RESP version every contender's connections speak: ioredis 6's default (3) unless `BENCH_RESP=2|3`
 * forces one for all of them alike, to tell the protocol's cost from the libraries' own.
 */
export const BENCH_PROTOCOL: 2 | 3 | undefined = parseProtocol(process.env.BENCH_RESP);

function parseProtocol(value: string | undefined): 2 | 3 | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === '2' || value === '3') return Number(value) as 2 | 3;
  throw new Error(`BENCH_RESP must be 2 or 3, not ${JSON.stringify(value)}`);
}

const protocolOption = () => (BENCH_PROTOCOL === undefined ? {} : { protocol: BENCH_PROTOCOL });

/**
 * How a peer's connection is built: `default` as its docs show (`new Redis(url)`), `pipelined` with
 * ioredis' `enableAutoPipelining`, the setting this library turns on for the connections it builds,
 * so a reader can tell what the library's transport gives from what its protocol costs.
 */
export type PeerClient = 'default' | 'pipelined';

/** One command connection to the target (a Cluster client routes each command to its key's master). */
function connect(target: BenchTarget, peerClient: PeerClient = 'default'): Redis | Cluster {
  const pipelining = peerClient === 'pipelined' ? { enableAutoPipelining: true } : {};
  return typeof target === 'string'
    ? new Redis(target, { ...protocolOption(), ...pipelining })
    : new Cluster([...target.cluster], { redisOptions: protocolOption(), ...pipelining });
}

/** The contender's name with its client setting, when not the default. */
function named(name: string, peerClient: PeerClient): string {
  return peerClient === 'pipelined' ? `${name} (auto-pipelined)` : name;
}

/** The module's `redis` option for the target, with the forced protocol if any. */
function moduleRedisOption(target: BenchTarget) {
  if (typeof target !== 'string') {
    return BENCH_PROTOCOL === undefined
      ? { cluster: [...target.cluster] }
      : { cluster: [...target.cluster], options: { redisOptions: protocolOption() } };
  }
  if (BENCH_PROTOCOL === undefined) return target;
  const { hostname, port } = new URL(target);
  return { host: hostname, port: Number(port || 6379), ...protocolOption() };
}

/** Lets go of one acquired lock. */
export type ReleaseLock = () => Promise<unknown>;

/**
 * One lock implementation under test, reduced to what the scenarios need: take a lock (waiting
 * the contender's own way if it is held) and give it back. Every contender talks to the same Redis
 * through one command connection of its own (plus a subscriber connection for ours).
 */
export interface LockContender {
  /** Short name used in tables and JSON. */
  readonly name: string;
  /** The settings used, for the report. */
  readonly settings: string;
  /** Resolves once the lock is held; rejects if it is still held by someone else after the wait bound. */
  acquire(key: string): Promise<ReleaseLock>;
  close(): Promise<void>;
}

/** Lease / TTL every contender gets: far above any hold in the bench, so no lock ever expires. */
export const LEASE_MS = 10_000;
/** How long an acquire may wait for a held lock before it counts as a timeout. */
export const WAIT_TIMEOUT_MS = 10_000;
/** Sleep between two SET NX tries of the raw baseline when the lock is held. */
export const RAW_RETRY_MS = 5;
/**
 * Redlock retry settings for a contended key. Its defaults (10 retries, 200 ± 100 ms apart) are made
 * for long holds: with 1 ms holds they would mostly measure the sleep, and give up after ~2 s.
 */
export const REDLOCK_SETTINGS = { retryCount: Math.ceil(WAIT_TIMEOUT_MS / 10), retryDelay: 10, retryJitter: 5 } as const;
/** redis-semaphore Mutex options: its defaults (retry every 10 ms, refresh at 80 % of the TTL) with our TTL. */
export const SEMAPHORE_OPTIONS = { lockTimeout: LEASE_MS, acquireTimeout: WAIT_TIMEOUT_MS, retryInterval: 10 } as const;

/**
 * This library, created the way an application does it: `RedisLockModule.forRoot` in a Nest
 * application context, `LockService` taken from it. Three contenders share that one context:
 * - `ours`: a fixed lease (like every peer here: no renewal timer), the default non-fair lock;
 * - `ours (watchdog)`: no `leaseTime`, the library's default mode, the watchdog renews the lease;
 * - `ours (fair)`: `fair: true`, FIFO hand-over through a queue in Redis, fixed lease.
 * Closing `ours` closes the shared context.
 */
export async function createOurContenders(
  target: BenchTarget,
  keyPrefix: string,
  moduleOptions: { readonly tracing?: boolean } = {},
): Promise<LockContender[]> {
  const app = await NestFactory.createApplicationContext(
    RedisLockModule.forRoot({ redis: moduleRedisOption(target), keyPrefix, ...moduleOptions }),
    { logger: false },
  );
  const locks = app.get(LockService);
  const variant = (name: string, options: AcquireOptions, settings: string): LockContender => ({
    name,
    settings: `LockService.acquire(key, { ${Object.entries(options)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')} }): ${settings}`,
    async acquire(key) {
      const handle = await locks.acquire(key, options);
      return () => handle.release();
    },
    // The shared application context is closed by `ours`.
    close: async () => undefined,
  });
  return [
    {
      ...variant('ours', { leaseTime: LEASE_MS, waitTimeout: WAIT_TIMEOUT_MS }, 'fixed lease, no watchdog; waits on pub/sub'),
      close: () => app.close(),
    },
    variant('ours (watchdog)', { waitTimeout: WAIT_TIMEOUT_MS }, 'default 30 s lease renewed by the watchdog'),
    variant('ours (fair)', { fair: true, leaseTime: LEASE_MS, waitTimeout: WAIT_TIMEOUT_MS }, 'FIFO queue in Redis, head woken by name'),
  ];
}

/** Compare-and-delete: the release every SET NX lock needs. KEYS[1] lock key, ARGV[1] owner token. */
const RAW_RELEASE_SCRIPT = `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
`;

/**
 * The floor any Redis lock pays: `SET key token NX PX ttl` to take, EVALSHA of a compare-and-delete
 * script to release. It has no waiting strategy of its own; when the key is held it retries every
 * `RAW_RETRY_MS` ms.
 */
export async function createRawContender(
  target: BenchTarget,
  keyPrefix: string,
  peerClient: PeerClient = 'default',
): Promise<LockContender> {
  const client = connect(target, peerClient);
  // Defined as a command: ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT (each master of a
  // cluster caches scripts on its own), so the release is still one round trip once warm.
  client.defineCommand('rawRelease', { numberOfKeys: 1, lua: RAW_RELEASE_SCRIPT });
  const release = (key: string, token: string) =>
    (client as unknown as { rawRelease(key: string, token: string): Promise<number> }).rawRelease(key, token);
  const tokenPrefix = randomBytes(6).toString('hex');
  let sequence = 0;
  return {
    name: named('raw', peerClient),
    settings: `SET NX PX ${LEASE_MS} + EVALSHA compare-and-delete; when held: retry loop, sleep ${RAW_RETRY_MS} ms`,
    async acquire(key) {
      const redisKey = `${keyPrefix}:${key}`;
      const token = `${tokenPrefix}:${++sequence}`;
      const deadline = performance.now() + WAIT_TIMEOUT_MS;
      while ((await client.set(redisKey, token, 'PX', LEASE_MS, 'NX')) !== 'OK') {
        if (performance.now() >= deadline) throw new Error(`raw: ${redisKey} still held after ${WAIT_TIMEOUT_MS} ms`);
        await sleep(RAW_RETRY_MS);
      }
      return async () => {
        await release(redisKey, token);
      };
    },
    close: async () => {
      await client.quit();
    },
  };
}

/** `@sesamecare-oss/redlock` on one ioredis client (a quorum of one), fixed-duration locks. */
export async function createRedlockContender(target: BenchTarget, keyPrefix: string): Promise<LockContender> {
  const client = connect(target);
  const redlock = new Redlock([client as Redis], REDLOCK_SETTINGS);
  return {
    name: 'redlock',
    settings:
      `redlock.acquire([key], ${LEASE_MS}); retryCount ${REDLOCK_SETTINGS.retryCount}, ` +
      `retryDelay ${REDLOCK_SETTINGS.retryDelay} ms, retryJitter ±${REDLOCK_SETTINGS.retryJitter} ms`,
    async acquire(key) {
      const lock = await redlock.acquire([`${keyPrefix}:${key}`], LEASE_MS);
      return async () => {
        await lock.release();
      };
    },
    close: async () => {
      await client.quit();
    },
  };
}

/** `redis-semaphore` 5 `Mutex` on one ioredis client, one `Mutex` object per acquire as its docs show. */
export async function createSemaphoreContender(
  target: BenchTarget,
  keyPrefix: string,
  peerClient: PeerClient = 'default',
): Promise<LockContender> {
  const client = connect(target, peerClient) as Redis;
  return {
    name: named('redis-semaphore', peerClient),
    settings:
      `new Mutex(client, key, { lockTimeout: ${SEMAPHORE_OPTIONS.lockTimeout}, acquireTimeout: ${SEMAPHORE_OPTIONS.acquireTimeout}, ` +
      `retryInterval: ${SEMAPHORE_OPTIONS.retryInterval} }) (its defaults; auto-refresh on)`,
    async acquire(key) {
      const mutex = new Mutex(client, `${keyPrefix}:${key}`, SEMAPHORE_OPTIONS);
      await mutex.acquire();
      return () => mutex.release();
    },
    close: async () => {
      await client.quit();
    },
  };
}

/**
 * The plain lock's own Redis protocol with nothing of the library around it: acquire-lock and
 * release-lock run straight on one client, keys built once per key. Not a real lock client (no
 * waiting, no handle, no lease timer, no options): it is the floor under `ours`, so that what the
 * protocol costs the client and what the library's JavaScript adds can be told apart.
 */
export async function createBareScriptsContender(target: string, keyPrefix: string): Promise<LockContender> {
  // Writes coalesced per event-loop turn like the module's own connection: the same transport, without the library.
  const client = connect(target) as Redis;
  coalesceWritesPerTick(client);
  const keySpace = new RedisKeySpace(keyPrefix);
  const keysOf = new Map<string, ReturnType<RedisKeySpace['lock']>>();
  const clientId = randomBytes(6).toString('hex');
  let sequence = 0;
  return {
    name: "ours' scripts alone",
    settings: 'acquire-lock + release-lock EVALSHA on one client, nothing else (a floor, not a lock client)',
    async acquire(key) {
      let keys = keysOf.get(key);
      if (!keys) keysOf.set(key, (keys = keySpace.lock(key)));
      const owner = `${clientId}:${++sequence}`;
      const hold = `${owner}/${sequence}`;
      const [ok] = await acquireLockScript.run<[number, string]>(
        client,
        [keys.owners, keys.fence],
        [owner, LEASE_MS, '0', '', hold, 'wait'],
      );
      if (ok !== 1) throw new Error(`bare scripts: ${key} is held`);
      const held = keys;
      return async () => {
        await releaseLockScript.run(client, [held.owners, held.wakeChannel, held.queue], [owner, 'publish', hold]);
      };
    },
    close: async () => {
      await client.quit();
    },
  };
}
