import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES_LIMIT, OPTION_BOUNDS } from './option-bounds.js';
import { describeValue, optionValidator as validate } from './option-validation.js';
import { DEFAULT_BACKOFF, resolveBackoff } from './retry-backoff.js';
import { refuseUnknownKeys } from './known-option-keys.js';
import { MODULE_OPTION_KEYS } from './module-option-keys.js';
import { resolveSyncReplicas } from './resolve-sync-replicas.js';
import { resolveTopicShards } from './resolve-topic-shards.js';
import type { RedisLockConfig } from './redis-lock-config.js';
import type { JobOutboxStore } from '../outbox-port/job-outbox-store.js';
import { defaultRedisForRedlock, resolveRedlockConfig } from './resolve-redlock-config.js';
import type { OutboxRelayOptions, RedisConnectionOptions, RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { transportSourceOf } from './transport-source.js';

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
/** See `RedisLockModuleOptions.unreachableTimeout`. */
const DEFAULT_UNREACHABLE_TIMEOUT = 2_000;
const EVICTION_POLICY_CHECKS = ['error', 'warn', 'off'] as const;

/**
 * Validates the module options and fills in defaults. Runs when the module is instantiated, so a
 * wrong option stops the application at bootstrap with the option named, not at the first call.
 */
export function resolveRedisLockConfig(options: RedisLockModuleOptions | undefined): RedisLockConfig {
  const o = options ?? {};
  if (typeof o !== 'object') throw new InvalidOptionsError('options', 'expected an object');
  refuseMisplacedIsGlobal(o);
  refuseUnknownKeysOfEveryLevel(o);

  const keyPrefix = o.keyPrefix ?? 'rl';
  if (typeof keyPrefix !== 'string' || !/^[A-Za-z0-9_.:-]{1,64}$/.test(keyPrefix)) {
    throw new InvalidOptionsError(
      'keyPrefix',
      `got ${JSON.stringify(keyPrefix)}; use 1-64 characters of letters, digits, '_', '.', ':' or '-' (no braces)`,
    );
  }

  const lock = o.lock ?? {};
  const leaseTime = validate.duration('lock.leaseTime', lock.leaseTime, { ...OPTION_BOUNDS.leaseTime, default: 30_000 });
  const dq = o.delayQueue ?? {};
  const retention = dq.retention ?? {};

  const lockConfig: RedisLockConfig['lock'] = {
    leaseTime,
    waitTimeout: validate.duration('lock.waitTimeout', lock.waitTimeout, { ...OPTION_BOUNDS.waitTimeout, default: 10_000 }),
    watchdog: validate.flag('lock.watchdog', lock.watchdog, { default: true }),
    fair: validate.flag('lock.fair', lock.fair, { default: false }),
    syncReplicas: resolveSyncReplicas('lock.syncReplicas', lock.syncReplicas, leaseTime),
  };
  const redlock = resolveRedlockConfig(o, lockConfig);

  return {
    redis: validateRedis(o.redis === undefined ? (redlock ? defaultRedisForRedlock(redlock) : DEFAULT_REDIS_URL) : o.redis),
    keyPrefix,
    lock: lockConfig,
    delayQueue: {
      concurrency: validate.wholeNumber('delayQueue.concurrency', dq.concurrency, { ...OPTION_BOUNDS.concurrency, default: 1 }),
      visibilityTimeout: validate.duration('delayQueue.visibilityTimeout', dq.visibilityTimeout, {
        ...OPTION_BOUNDS.visibilityTimeout,
        default: 30_000,
      }),
      maxAttempts: validate.wholeNumber('delayQueue.maxAttempts', dq.maxAttempts, { ...OPTION_BOUNDS.maxAttempts, default: 5 }),
      // A null section counts as absent, like a null `lock` or `delayQueue`.
      backoff: resolveBackoff(validate, 'delayQueue.backoff', dq.backoff ?? undefined, DEFAULT_BACKOFF),
      shutdownTimeout: validate.duration('delayQueue.shutdownTimeout', dq.shutdownTimeout, {
        ...OPTION_BOUNDS.shutdownTimeout,
        default: 10_000,
      }),
      retention: {
        deadLetterMaxCount: validate.wholeNumber('delayQueue.retention.deadLetterMaxCount', retention.deadLetterMaxCount, {
          min: 0,
          max: Number.MAX_SAFE_INTEGER,
          default: 10_000,
        }),
        deadLetterMaxAge: validate.duration('delayQueue.retention.deadLetterMaxAge', retention.deadLetterMaxAge, {
          min: 0,
          default: 7 * 86_400_000,
        }),
      },
      maxPayloadBytes: validate.wholeNumber('delayQueue.maxPayloadBytes', dq.maxPayloadBytes, {
        min: 1_024,
        max: MAX_PAYLOAD_BYTES_LIMIT,
        default: DEFAULT_MAX_PAYLOAD_BYTES,
        use: `use a whole number of bytes from 1024 to ${MAX_PAYLOAD_BYTES_LIMIT} (Redis's largest value)`,
      }),
      topics: resolveTopicShards(dq.topics),
      outbox: resolveOutbox(dq.outbox, dq.outboxRelay),
    },
    transactions: validateTransactions(o.transactions),
    connectTimeout: validate.duration('connectTimeout', o.connectTimeout, { min: 0, default: 10_000 }),
    unreachableTimeout:
      o.unreachableTimeout === false
        ? false
        : validate.duration('unreachableTimeout', o.unreachableTimeout, { min: 100, default: DEFAULT_UNREACHABLE_TIMEOUT }),
    evictionPolicyCheck: validate.oneOf('evictionPolicyCheck', o.evictionPolicyCheck, EVICTION_POLICY_CHECKS, { default: 'error' }),
    redlock,
    tracing: validate.flag('tracing', o.tracing, { default: true }),
  };
}

/**
 * Refuses keys no level of the options has (a misspelt key would fall back to its default in
 * silence: two applications with `keyprefix` share the default prefix). The levels' own values are
 * checked by their resolvers; a level that is not an object is left to them.
 */
function refuseUnknownKeysOfEveryLevel(o: RedisLockModuleOptions): void {
  const refuse = validate.refuse;
  const keys = MODULE_OPTION_KEYS;
  refuseUnknownKeys(refuse, '', o, keys.root);
  refuseUnknownKeys(refuse, 'lock', o.lock, keys.lock);
  refuseUnknownKeys(refuse, 'lock.syncReplicas', o.lock?.syncReplicas, keys.syncReplicas);
  refuseUnknownKeys(refuse, 'redlock', o.redlock, keys.redlock);
  const dq = o.delayQueue;
  if (dq !== null && typeof dq === 'object' && 'maxIdleWait' in dq) {
    refuse(
      'delayQueue.maxIdleWait',
      'is a per-consumer option with no module default; set it on the consumer: @OnDelayed(topic, { maxIdleWait }) ' +
        'or consume(topic, handler, { maxIdleWait })',
    );
  }
  refuseUnknownKeys(refuse, 'delayQueue', dq, keys.delayQueue);
  refuseUnknownKeys(refuse, 'delayQueue.backoff', dq?.backoff, keys.backoff);
  refuseUnknownKeys(refuse, 'delayQueue.retention', dq?.retention, keys.retention);
  refuseUnknownKeys(refuse, 'delayQueue.outboxRelay', dq?.outboxRelay, keys.outboxRelay);
  const topics: unknown = dq?.topics;
  if (topics !== null && typeof topics === 'object') {
    for (const [topic, settings] of Object.entries(topics)) {
      refuseUnknownKeys(refuse, `delayQueue.topics[${JSON.stringify(topic)}]`, settings, keys.topic);
    }
  }
}

/**
 * `isGlobal` is an option of `forRoot` itself (Nest takes it out before the options reach us), so
 * here it can only come from a `forRootAsync` factory, where it does nothing.
 */
function refuseMisplacedIsGlobal(o: object): void {
  if (!('isGlobal' in o)) return;
  throw new InvalidOptionsError(
    'isGlobal',
    'returned by the forRootAsync factory, where it has no effect; put it beside the factory: ' +
      'RedisLockModule.forRootAsync({ isGlobal: true, useFactory: ... })',
  );
}

function validateRedis(redis: unknown): RedisLockModuleOptions['redis'] & object {
  if (typeof redis === 'string') {
    if (!/^rediss?:\/\//.test(redis)) {
      throw new InvalidOptionsError('redis', `got ${JSON.stringify(redis)}; a URL must start with redis:// or rediss://`);
    }
    return redis as never;
  }
  if (redis === null) {
    // Only an absent `redis` means the default: null is more likely a missing setting than a choice.
    throw new InvalidOptionsError(
      'redis',
      'got null; leave `redis` out for the default connection, or pass a redis:// URL, ioredis options, { cluster: nodes } ' +
        'or { client } with an existing client (ioredis, iovalkey, node-redis or GLIDE)',
    );
  }
  if (typeof redis !== 'object' || Array.isArray(redis)) {
    throw new InvalidOptionsError(
      'redis',
      'use a redis:// URL, ioredis options, { cluster: nodes }, or { client } with an existing client (ioredis, iovalkey, node-redis or GLIDE)',
    );
  }
  // The driver named or detected, and its settings' shape (throws InvalidOptionsError naming the option).
  transportSourceOf(redis as RedisConnectionOptions);
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

const OUTBOX_METHODS = ['insert', 'claimBatch', 'release', 'delete', 'park'] as const;

/** The outbox store and its relay's settings (validated even without a store), or undefined without a store. */
function resolveOutbox(value: unknown, relay: OutboxRelayOptions | undefined): RedisLockConfig['delayQueue']['outbox'] {
  const settings = relay ?? {};
  const pollInterval = validate.duration('delayQueue.outboxRelay.pollInterval', settings.pollInterval, { min: 10, default: 1_000 });
  const batchSize = validate.wholeNumber('delayQueue.outboxRelay.batchSize', settings.batchSize, { min: 1, max: 10_000, default: 500 });
  const minAge = validate.duration('delayQueue.outboxRelay.minAge', settings.minAge, { min: 0, default: 2_000 });
  const claimLease = validate.duration('delayQueue.outboxRelay.claimLease', settings.claimLease, { min: 1_000, default: 60_000 });
  if (value === undefined || value === null) return undefined;
  const missing = OUTBOX_METHODS.filter((name) => typeof (value as Record<string, unknown>)[name] !== 'function');
  if (typeof value !== 'object' || missing.length > 0) {
    throw new InvalidOptionsError(
      'delayQueue.outbox',
      `expected a JobOutboxStore (${OUTBOX_METHODS.map((m) => `${m}()`).join(', ')}), got ${describeValue(value)}` +
        (typeof value === 'object' ? ` without ${missing.map((m) => `${m}()`).join(', ')}` : '') +
        "; use e.g. new PostgresJobOutbox({ ... }) from 'nestjs-redis-lock/outbox/postgres'",
    );
  }
  return { store: value as JobOutboxStore, pollInterval, batchSize, minAge, claimLease };
}
