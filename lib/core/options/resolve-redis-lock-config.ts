import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { resolveSyncReplicas } from './resolve-sync-replicas.js';
import { resolveTopicShards } from './resolve-topic-shards.js';
import type { RedisLockConfig } from './redis-lock-config.js';
import { defaultRedisForRedlock, resolveRedlockConfig } from './resolve-redlock-config.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * Validates the module options and fills in defaults. Runs when the module is instantiated, so a
 * wrong option stops the application at bootstrap with the option named, not at the first call.
 */
export function resolveRedisLockConfig(options: RedisLockModuleOptions | undefined): RedisLockConfig {
  const o = options ?? {};
  if (typeof o !== 'object') throw new InvalidOptionsError('options', 'expected an object');

  const keyPrefix = o.keyPrefix ?? 'rl';
  if (typeof keyPrefix !== 'string' || !/^[A-Za-z0-9_.:-]{1,64}$/.test(keyPrefix)) {
    throw new InvalidOptionsError(
      'keyPrefix',
      `got ${JSON.stringify(keyPrefix)}; use 1-64 characters of letters, digits, '_', '.', ':' or '-' (no braces)`,
    );
  }

  const lock = o.lock ?? {};
  const leaseTime = duration('lock.leaseTime', lock.leaseTime, 30_000, { min: 10 });
  const dq = o.delayQueue ?? {};
  const backoff = dq.backoff ?? {};
  const retention = dq.retention ?? {};

  const jitter = backoff.jitter ?? 0.2;
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw new InvalidOptionsError('delayQueue.backoff.jitter', `got ${String(jitter)}; use a number from 0 to 1`);
  }
  const factor = backoff.factor ?? 2;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1) {
    throw new InvalidOptionsError('delayQueue.backoff.factor', `got ${String(factor)}; use a finite number >= 1`);
  }

  const lockConfig: RedisLockConfig['lock'] = {
    leaseTime,
    waitTimeout: duration('lock.waitTimeout', lock.waitTimeout, 10_000, { min: 0 }),
    watchdog: flag('lock.watchdog', lock.watchdog, true),
    fair: flag('lock.fair', lock.fair, false),
    syncReplicas: resolveSyncReplicas('lock.syncReplicas', lock.syncReplicas, leaseTime),
  };
  const redlock = resolveRedlockConfig(o, lockConfig, duration);

  return {
    redis: validateRedis(o.redis ?? (redlock ? defaultRedisForRedlock(redlock) : DEFAULT_REDIS_URL)),
    keyPrefix,
    lock: lockConfig,
    delayQueue: {
      concurrency: integer('delayQueue.concurrency', dq.concurrency, 1, { min: 1, max: 10_000 }),
      visibilityTimeout: duration('delayQueue.visibilityTimeout', dq.visibilityTimeout, 30_000, { min: 100 }),
      maxAttempts: integer('delayQueue.maxAttempts', dq.maxAttempts, 5, { min: 1, max: 1_000_000 }),
      backoff: {
        delay: duration('delayQueue.backoff.delay', backoff.delay, 1_000, { min: 0 }),
        factor,
        maxDelay: duration('delayQueue.backoff.maxDelay', backoff.maxDelay, 3_600_000, { min: 0 }),
        jitter,
      },
      shutdownTimeout: duration('delayQueue.shutdownTimeout', dq.shutdownTimeout, 10_000, { min: 0 }),
      retention: {
        deadLetterMaxCount: integer('delayQueue.retention.deadLetterMaxCount', retention.deadLetterMaxCount, 10_000, {
          min: 0,
          max: Number.MAX_SAFE_INTEGER,
        }),
        deadLetterMaxAge: duration('delayQueue.retention.deadLetterMaxAge', retention.deadLetterMaxAge, 7 * 86_400_000, {
          min: 0,
        }),
      },
      topics: resolveTopicShards(dq.topics),
    },
    transactions: validateTransactions(o.transactions),
    connectTimeout: duration('connectTimeout', o.connectTimeout, 10_000, { min: 0 }),
    evictionPolicyCheck: oneOf('evictionPolicyCheck', o.evictionPolicyCheck, ['error', 'warn', 'off'] as const, 'error'),
    redlock,
    tracing: flag('tracing', o.tracing, true),
  };
}

/** A duration in ms: a finite, non-negative number (the largest is about 24 days, the timer limit). */
export function duration(option: string, value: unknown, fallback: number, { min }: { min: number }): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > MAX_TIMER_MS) {
    throw new InvalidOptionsError(
      option,
      `got ${describe(value)}; use a number of milliseconds from ${min} to ${MAX_TIMER_MS}`,
    );
  }
  return Math.floor(value);
}

function integer(option: string, value: unknown, fallback: number, { min, max }: { min: number; max: number }): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionsError(option, `got ${describe(value)}; use a whole number from ${min} to ${max}`);
  }
  return value;
}

function flag(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidOptionsError(option, `got ${describe(value)}; use true or false`);
  return value;
}

function oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    throw new InvalidOptionsError(option, `got ${describe(value)}; use ${allowed.map((a) => `'${a}'`).join(', ')}`);
  }
  return value as T;
}

function validateRedis(redis: unknown): RedisLockModuleOptions['redis'] & object {
  if (typeof redis === 'string') {
    if (!/^rediss?:\/\//.test(redis)) {
      throw new InvalidOptionsError('redis', `got ${JSON.stringify(redis)}; a URL must start with redis:// or rediss://`);
    }
    return redis as never;
  }
  if (redis === null || typeof redis !== 'object' || Array.isArray(redis)) {
    throw new InvalidOptionsError(
      'redis',
      'use a redis:// URL, ioredis options, { cluster: nodes }, or { client } with an existing ioredis client',
    );
  }
  if ('client' in redis) {
    const client = (redis as { client: unknown }).client;
    if (!client || typeof (client as { duplicate?: unknown }).duplicate !== 'function') {
      throw new InvalidOptionsError('redis.client', 'expected an ioredis Redis or Cluster instance');
    }
  }
  if ('cluster' in redis) {
    const nodes = (redis as { cluster: unknown }).cluster;
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new InvalidOptionsError('redis.cluster', 'expected a non-empty array of cluster nodes');
    }
  }
  return redis as never;
}

function validateTransactions(value: unknown): RedisLockConfig['transactions'] {
  if (value === undefined) return undefined;
  const port = value as { isActive?: unknown; register?: unknown };
  if (!port || typeof port.isActive !== 'function' || typeof port.register !== 'function') {
    throw new InvalidOptionsError('transactions', 'expected a TransactionSynchronizer with isActive() and register()');
  }
  return value as RedisLockConfig['transactions'];
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  return value === null ? 'null' : typeof value;
}

/** setTimeout's upper bound: longer delays fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;
