import { Test, type TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import type { RedlockOptions } from '../../lib/core/options/redis-lock-module-options.interface.js';
import type { Redis } from 'ioredis';
import { RedlockMasters } from '../../lib/lock/redlock/redlock-masters.js';
import { startIndependentMasters, type IndependentMasters } from '../support/independent-masters.js';
import { uniquePrefix } from '../support/test-app.js';
import { readThrough, useResource } from '../support/use-resource.js';
import { sleep, waitFor } from '../support/timing.js';

/** A Nest testing module in Redlock mode over `urls`; closed with `app.close()`. */
export async function createRedlockApp(
  urls: string[],
  options: Omit<RedisLockModuleOptions, 'redlock'> & { redlock?: Partial<RedlockOptions> } = {},
): Promise<TestingModule> {
  const { redlock, ...rest } = options;
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ keyPrefix: uniquePrefix('rl'), ...rest, redlock: { clients: urls, ...redlock } })],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

/** Two Redlock apps on one key prefix: two processes contending for the same locks. */
export async function createRedlockPair(
  urls: string[],
  options: Omit<RedisLockModuleOptions, 'redlock'> & { redlock?: Partial<RedlockOptions> } = {},
): Promise<{ apps: TestingModule[]; a: LockService; b: LockService; keyPrefix: string; close(): Promise<void> }> {
  const keyPrefix = options.keyPrefix ?? uniquePrefix('rlp');
  const apps = await Promise.all([createRedlockApp(urls, { ...options, keyPrefix }), createRedlockApp(urls, { ...options, keyPrefix })]);
  return {
    apps,
    a: apps[0].get(LockService),
    b: apps[1].get(LockService),
    keyPrefix,
    close: async () => {
      await Promise.all(apps.map((app) => app.close()));
    },
  };
}

type RedlockPair = Awaited<ReturnType<typeof createRedlockPair>>;

/**
 * A Redlock pair on `urls()` (masters the enclosing block started) for a describe block, read through:
 * made before its tests, closed after them.
 */
export function useRedlockPairOn(urls: () => string[], options: Parameters<typeof createRedlockPair>[1] = {}): RedlockPair {
  return useResource(
    'the Redlock pair',
    () => createRedlockPair(urls(), options),
    (pair) => pair.close(),
  );
}

/** While `a` holds `key`, `b` waiting for it gives up with LockAcquireTimeoutError after `waitTimeout`, within 5 s. */
export async function expectWaitTimeoutHonoured(pair: RedlockPair, key: string, waitTimeout: number): Promise<void> {
  const held = await pair.a.acquire(key);
  try {
    const started = performance.now();
    const error = await pair.b.acquire(key, { waitTimeout }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquireTimeoutError);
    expect(performance.now() - started).toBeLessThan(5_000);
  } finally {
    await held.release();
  }
}

/**
 * Three independent masters and a Redlock pair on them for a describe block, both read through: the
 * masters start first; after the tests the pair closes before the masters stop.
 */
export function useRedlockPair(options: Parameters<typeof createRedlockPair>[1] = {}): { masters: IndependentMasters; pair: RedlockPair } {
  let started: { masters: IndependentMasters; pair?: RedlockPair } | undefined;
  beforeAll(async () => {
    started = { masters: await startIndependentMasters(3) };
    started.pair = await createRedlockPair(started.masters.urls, options);
  });
  afterAll(async () => {
    await started?.pair?.close();
    await started?.masters.stop();
  });
  return {
    masters: readThrough('the Redlock masters', () => started?.masters),
    pair: readThrough('the Redlock pair', () => started?.pair),
  };
}

/**
 * Runs `rounds` read-modify-write increments from each of `workers` concurrent loops per service,
 * under the lock; returns the final count and the fencing tokens in the order the sections ran.
 */
export async function contendedIncrements(
  services: LockService[],
  key: string,
  { workers = 3, rounds = 10, waitTimeout = 30_000 }: { workers?: number; rounds?: number; waitTimeout?: number } = {},
): Promise<{ count: number; tokens: bigint[]; overlaps: number }> {
  let count = 0;
  let inside = 0;
  let overlaps = 0;
  const tokens: bigint[] = [];
  const loop = async (locks: LockService) => {
    for (let i = 0; i < rounds; i++) {
      await locks.using(
        key,
        async (lock) => {
          inside++;
          if (inside > 1) overlaps++;
          tokens.push(BigInt(lock.fencingToken));
          const read = count;
          await sleep(1);
          count = read + 1;
          inside--;
        },
        { waitTimeout },
      );
    }
  };
  await Promise.all(services.flatMap((locks) => Array.from({ length: workers }, () => loop(locks))));
  return { count, tokens, overlaps };
}

/** True when every token is greater than the one before. */
export function strictlyIncreasing(tokens: bigint[]): boolean {
  return tokens.every((token, i) => i === 0 || token > tokens[i - 1]);
}

/**
 * Resolves once every master connection of `apps` is ready again (after masters were restarted),
 * so a test does not end with connections half-way through a reconnect.
 */
export async function mastersReconnected(apps: TestingModule[], timeoutMs = 30_000): Promise<void> {
  const connections = apps.flatMap((app) =>
    app.get(RedlockMasters).masters.flatMap((master) => {
      const pubSub = (master as unknown as { pubSub?: Redis }).pubSub;
      return pubSub ? [master.client, pubSub] : [master.client];
    }),
  );
  await waitFor(() => connections.every((c) => c.status === 'ready'), timeoutMs, 'the Redlock masters to reconnect', { every: 50 });
}
