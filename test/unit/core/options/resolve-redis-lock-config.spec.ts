import { InvalidOptionsError, type RedisLockModuleOptions } from '../../../../lib/index.js';
import { MAX_TIMER_MS } from '../../../../lib/core/options/option-validation.js';
import { MAX_LEASE_MS } from '../../../../lib/core/options/option-bounds.js';
import { resolveRedisLockConfig } from '../../../../lib/core/options/resolve-redis-lock-config.js';
import { refusedWith } from '../../../support/thrown.js';

/** The option an InvalidOptionsError names, or a failure when the call does not throw one. */
function refusedOption(options: unknown): string {
  return refusedWith(InvalidOptionsError, () => resolveRedisLockConfig(options as RedisLockModuleOptions), options).option;
}

describe('resolveRedisLockConfig: defaults', () => {
  it('fills in every default when no options are given', () => {
    const config = resolveRedisLockConfig(undefined);
    expect(config).toEqual({
      redis: 'redis://127.0.0.1:6379',
      keyPrefix: 'rl',
      lock: { leaseTime: 30_000, waitTimeout: 10_000, watchdog: true, fair: false, syncReplicas: undefined },
      delayQueue: {
        concurrency: 1,
        visibilityTimeout: 30_000,
        maxAttempts: 5,
        backoff: { delay: 1_000, factor: 2, maxDelay: 3_600_000, jitter: 0.2 },
        shutdownTimeout: 10_000,
        retention: { deadLetterMaxCount: 10_000, deadLetterMaxAge: 7 * 86_400_000 },
        maxPayloadBytes: 524_288,
        topics: new Map(),
      },
      transactions: undefined,
      connectTimeout: 10_000,
      unreachableTimeout: 2_000,
      evictionPolicyCheck: 'error',
      redlock: undefined,
      tracing: true,
    });
  });

  it('gives the same result for undefined and for an empty object', () => {
    expect(resolveRedisLockConfig({})).toEqual(resolveRedisLockConfig(undefined));
  });

  it('keeps given values and fills in only what is missing', () => {
    const config = resolveRedisLockConfig({
      keyPrefix: 'app:locks',
      lock: { leaseTime: 5_000, fair: true },
      delayQueue: { concurrency: 8, backoff: { delay: 50 } },
      evictionPolicyCheck: 'warn',
      tracing: false,
    });
    expect(config.keyPrefix).toBe('app:locks');
    expect(config.lock).toMatchObject({ leaseTime: 5_000, waitTimeout: 10_000, watchdog: true, fair: true });
    expect(config.delayQueue.concurrency).toBe(8);
    expect(config.delayQueue.backoff).toEqual({ delay: 50, factor: 2, maxDelay: 3_600_000, jitter: 0.2 });
    expect(config.evictionPolicyCheck).toBe('warn');
    expect(config.tracing).toBe(false);
  });

  it('rounds durations down to whole milliseconds', () => {
    const config = resolveRedisLockConfig({ lock: { leaseTime: 1_500.9, waitTimeout: 0.5 } });
    expect(config.lock.leaseTime).toBe(1_500);
    expect(config.lock.waitTimeout).toBe(0);
  });

  it('accepts the bounds of each range', () => {
    const config = resolveRedisLockConfig({
      lock: { leaseTime: 10, waitTimeout: MAX_TIMER_MS },
      delayQueue: { concurrency: 10_000, visibilityTimeout: 100, maxAttempts: 1, backoff: { factor: 1, jitter: 1 } },
    });
    expect(config.lock).toMatchObject({ leaseTime: 10, waitTimeout: MAX_TIMER_MS });
    expect(config.delayQueue).toMatchObject({ concurrency: 10_000, visibilityTimeout: 100, maxAttempts: 1 });
    expect(config.delayQueue.backoff).toMatchObject({ factor: 1, jitter: 1 });
  });
});

describe('resolveRedisLockConfig: refused options name the option', () => {
  it.each<[string, unknown, string]>([
    ['options that are not an object', 'redis://x', 'options'],
    ['an empty keyPrefix', { keyPrefix: '' }, 'keyPrefix'],
    ['a keyPrefix with braces', { keyPrefix: 'a{b}' }, 'keyPrefix'],
    ['a keyPrefix with a space', { keyPrefix: 'my app' }, 'keyPrefix'],
    ['a keyPrefix over 64 characters', { keyPrefix: 'p'.repeat(65) }, 'keyPrefix'],
    ['a keyPrefix that is not a string', { keyPrefix: 42 }, 'keyPrefix'],
    ['a leaseTime below 10 ms', { lock: { leaseTime: 9 } }, 'lock.leaseTime'],
    ['a NaN leaseTime', { lock: { leaseTime: Number.NaN } }, 'lock.leaseTime'],
    ['an infinite leaseTime', { lock: { leaseTime: Infinity } }, 'lock.leaseTime'],
    ['a leaseTime past a year', { lock: { leaseTime: MAX_LEASE_MS + 1 } }, 'lock.leaseTime'],
    ['a leaseTime given as a string', { lock: { leaseTime: '30000' } }, 'lock.leaseTime'],
    ['a negative waitTimeout', { lock: { waitTimeout: -1 } }, 'lock.waitTimeout'],
    ['a watchdog that is not a boolean', { lock: { watchdog: 'yes' } }, 'lock.watchdog'],
    ['a fair flag that is not a boolean', { lock: { fair: 1 } }, 'lock.fair'],
    ['a concurrency of 0', { delayQueue: { concurrency: 0 } }, 'delayQueue.concurrency'],
    ['a fractional concurrency', { delayQueue: { concurrency: 1.5 } }, 'delayQueue.concurrency'],
    ['a concurrency over 10000', { delayQueue: { concurrency: 10_001 } }, 'delayQueue.concurrency'],
    ['a visibilityTimeout below 100 ms', { delayQueue: { visibilityTimeout: 99 } }, 'delayQueue.visibilityTimeout'],
    ['maxAttempts of 0', { delayQueue: { maxAttempts: 0 } }, 'delayQueue.maxAttempts'],
    ['a negative backoff delay', { delayQueue: { backoff: { delay: -1 } } }, 'delayQueue.backoff.delay'],
    ['a backoff factor below 1', { delayQueue: { backoff: { factor: 0.5 } } }, 'delayQueue.backoff.factor'],
    ['an infinite backoff factor', { delayQueue: { backoff: { factor: Infinity } } }, 'delayQueue.backoff.factor'],
    ['a backoff jitter above 1', { delayQueue: { backoff: { jitter: 1.5 } } }, 'delayQueue.backoff.jitter'],
    ['a NaN backoff jitter', { delayQueue: { backoff: { jitter: Number.NaN } } }, 'delayQueue.backoff.jitter'],
    ['a negative backoff maxDelay', { delayQueue: { backoff: { maxDelay: -5 } } }, 'delayQueue.backoff.maxDelay'],
    ['a negative shutdownTimeout', { delayQueue: { shutdownTimeout: -1 } }, 'delayQueue.shutdownTimeout'],
    ['a negative deadLetterMaxCount', { delayQueue: { retention: { deadLetterMaxCount: -1 } } }, 'delayQueue.retention.deadLetterMaxCount'],
    ['a negative deadLetterMaxAge', { delayQueue: { retention: { deadLetterMaxAge: -1 } } }, 'delayQueue.retention.deadLetterMaxAge'],
    ['a maxPayloadBytes below 1 KiB', { delayQueue: { maxPayloadBytes: 1023 } }, 'delayQueue.maxPayloadBytes'],
    ['a maxPayloadBytes over 512 MiB', { delayQueue: { maxPayloadBytes: 536_870_913 } }, 'delayQueue.maxPayloadBytes'],
    ['a negative connectTimeout', { connectTimeout: -1 }, 'connectTimeout'],
    ['an unreachableTimeout below 100 ms', { unreachableTimeout: 50 }, 'unreachableTimeout'],
    ['an unreachableTimeout of true', { unreachableTimeout: true as never }, 'unreachableTimeout'],
    ['an unknown evictionPolicyCheck', { evictionPolicyCheck: 'ignore' }, 'evictionPolicyCheck'],
    ['a tracing flag that is not a boolean', { tracing: 'on' }, 'tracing'],
    ['a redis URL without the redis:// scheme', { redis: 'localhost:6379' }, 'redis'],
    ['a redis option that is an array', { redis: ['redis://a'] }, 'redis'],
    ['a redis client that is not an ioredis client', { redis: { client: {} } }, 'redis.client'],
    ['an empty cluster node list', { redis: { cluster: [] } }, 'redis.cluster'],
    ['transactions without isActive/register', { transactions: { isActive: () => false } }, 'transactions'],
    ['syncReplicas that is not an object', { lock: { syncReplicas: 1 } }, 'lock.syncReplicas'],
    ['a backoff that is not an object', { delayQueue: { backoff: 5 } }, 'delayQueue.backoff'],
    ['a null backoff factor', { delayQueue: { backoff: { factor: null } } }, 'delayQueue.backoff.factor'],
    ['a null concurrency', { delayQueue: { concurrency: null } }, 'delayQueue.concurrency'],
    [
      'a fractional deadLetterMaxCount',
      { delayQueue: { retention: { deadLetterMaxCount: 1.5 } } },
      'delayQueue.retention.deadLetterMaxCount',
    ],
    ['syncReplicas without a timeout', { lock: { syncReplicas: { replicas: 1 } } }, 'lock.syncReplicas.timeout'],
    ['syncReplicas with 0 replicas', { lock: { syncReplicas: { replicas: 0, timeout: 100 } } }, 'lock.syncReplicas.replicas'],
    [
      'a syncReplicas timeout of half the lease',
      { lock: { leaseTime: 1_000, syncReplicas: { replicas: 1, timeout: 500 } } },
      'lock.syncReplicas.timeout',
    ],
    [
      'a syncReplicas timeout of 0 (WAIT would block forever)',
      { lock: { syncReplicas: { replicas: 1, timeout: 0 } } },
      'lock.syncReplicas.timeout',
    ],
    ['an outbox that is not a store', { delayQueue: { outbox: { insert: () => undefined } } }, 'delayQueue.outbox'],
    ['an outbox relay claim lease below 1 s', { delayQueue: { outboxRelay: { claimLease: 999 } } }, 'delayQueue.outboxRelay.claimLease'],
    [
      'an outbox relay poll interval below 10 ms',
      { delayQueue: { outboxRelay: { pollInterval: 5 } } },
      'delayQueue.outboxRelay.pollInterval',
    ],
    ['a negative outbox relay minAge', { delayQueue: { outboxRelay: { minAge: -1 } } }, 'delayQueue.outboxRelay.minAge'],
  ])('refuses %s', (_label, options, option) => {
    expect(refusedOption(options)).toBe(option);
  });

  it('says what to use instead in the message', () => {
    expect(() => resolveRedisLockConfig({ lock: { leaseTime: -1 } })).toThrow(
      `Invalid option \`lock.leaseTime\`: got -1; use a number of milliseconds from 10 to ${MAX_LEASE_MS}.`,
    );
    expect(() => resolveRedisLockConfig({ delayQueue: { concurrency: '4' as never } })).toThrow(
      'Invalid option `delayQueue.concurrency`: got the string "4"; use a whole number from 1 to 10000.',
    );
    expect(() => resolveRedisLockConfig({ evictionPolicyCheck: null as never })).toThrow(
      "Invalid option `evictionPolicyCheck`: got null; use 'error', 'warn', 'off'.",
    );
  });
});

describe('resolveRedisLockConfig: connection options', () => {
  it.each<[string, RedisLockModuleOptions['redis']]>([
    ['a redis:// URL', 'redis://cache:6380/2'],
    ['a rediss:// URL', 'rediss://user:secret@cache:6380'],
    ['ioredis options', { host: 'cache', port: 6380 }],
    ['cluster nodes', { cluster: [{ host: 'a', port: 7000 }] }],
  ])('passes %s through unchanged', (_label, redis) => {
    expect(resolveRedisLockConfig({ redis }).redis).toBe(redis);
  });

  it('accepts a synchronizer with isActive() and register()', () => {
    const transactions = { isActive: () => false, register: () => undefined };
    expect(resolveRedisLockConfig({ transactions }).transactions).toBe(transactions);
  });

  it('refuses redis: null, naming the option and what to pass (only an absent redis means the default)', () => {
    expect(refusedOption({ redis: null })).toBe('redis');
    expect(() => resolveRedisLockConfig({ redis: null as never })).toThrow(
      'Invalid option `redis`: got null; leave `redis` out for the default connection, or pass a redis:// URL, ioredis options, ' +
        '{ cluster: nodes } or { client } with an existing client (ioredis, iovalkey, node-redis or GLIDE).',
    );
    expect(refusedOption({ redis: null, redlock: { clients: ['redis://m1', 'redis://m2', 'redis://m3'] } })).toBe('redis');
  });

  it('reads lock.syncReplicas: false as off, in either mode', () => {
    expect(resolveRedisLockConfig({ lock: { syncReplicas: false } }).lock.syncReplicas).toBeUndefined();
    const redlock = resolveRedisLockConfig({
      lock: { syncReplicas: false },
      redlock: { clients: ['redis://m1', 'redis://m2', 'redis://m3'] },
    });
    expect(redlock.lock.syncReplicas).toBeUndefined();
  });

  it('keeps a syncReplicas timeout just below half the lease', () => {
    expect(resolveRedisLockConfig({ lock: { leaseTime: 1_000, syncReplicas: { replicas: 2, timeout: 499 } } }).lock.syncReplicas).toEqual({
      replicas: 2,
      timeout: 499,
    });
  });
});

describe('resolveRedisLockConfig: Redlock mode', () => {
  const masters = ['redis://m1:6379', 'redis://m2:6379', 'redis://m3:6379'];

  it('needs a majority of the masters, and uses the first master as the module connection', () => {
    const config = resolveRedisLockConfig({ redlock: { clients: masters } });
    expect(config.redlock).toEqual({
      clients: masters,
      quorum: 2,
      driftFactor: 0.01,
      requestTimeout: 500,
      retryJitter: 50,
      retryDelay: 250,
    });
    expect(config.redis).toBe('redis://m1:6379');
    expect(resolveRedisLockConfig({ redlock: { clients: [...masters, 'redis://m4', 'redis://m5'] } }).redlock?.quorum).toBe(3);
    expect(resolveRedisLockConfig({ redlock: { clients: [...masters, 'redis://m4'] } }).redlock?.quorum).toBe(3);
  });

  it('keeps an explicit redis connection', () => {
    expect(resolveRedisLockConfig({ redis: 'redis://other:6379', redlock: { clients: masters } }).redis).toBe('redis://other:6379');
  });

  it.each<[string, unknown, string]>([
    ['redlock that is not an object', { redlock: 'redis://m1' }, 'redlock'],
    ['no masters', { redlock: { clients: [] } }, 'redlock.clients'],
    ['a master URL without a scheme', { redlock: { clients: ['m1:6379', ...masters] } }, 'redlock.clients[0]'],
    [
      'the same master twice (default port spelled out)',
      { redlock: { clients: ['redis://m1', 'redis://m1:6379', 'redis://m2'] } },
      'redlock.clients[1]',
    ],
    [
      'the same master as URL and as options',
      { redlock: { clients: ['redis://m1:7000', 'redis://m2', { host: 'm1', port: 7000 }] } },
      'redlock.clients[2]',
    ],
    [
      'a cluster as a master',
      { redlock: { clients: [{ cluster: [{ host: 'a', port: 1 }] }, 'redis://m2', 'redis://m3'] } },
      'redlock.clients[0]',
    ],
    ['a { client } wrapper as a master', { redlock: { clients: ['redis://m1', { client: {} }, 'redis://m3'] } }, 'redlock.clients[1]'],
    [
      'a Sentinel group as a master',
      { redlock: { clients: ['redis://m1', 'redis://m2', { sentinels: [], name: 'x' }] } },
      'redlock.clients[2]',
    ],
    ['a driftFactor of 0.5', { redlock: { clients: masters, driftFactor: 0.5 } }, 'redlock.driftFactor'],
    ['a requestTimeout of 0', { redlock: { clients: masters, requestTimeout: 0 } }, 'redlock.requestTimeout'],
    ['a retryDelay of 0', { redlock: { clients: masters, retryDelay: 0 } }, 'redlock.retryDelay'],
    ['a negative retryJitter', { redlock: { clients: masters, retryJitter: -1 } }, 'redlock.retryJitter'],
    ['a NaN driftFactor', { redlock: { clients: masters, driftFactor: Number.NaN } }, 'redlock.driftFactor'],
    ['a null master', { redlock: { clients: [null, 'redis://m2', 'redis://m3'] } }, 'redlock.clients[0]'],
    ['fair locks', { lock: { fair: true }, redlock: { clients: masters } }, 'lock.fair'],
    ['syncReplicas', { lock: { syncReplicas: { replicas: 1, timeout: 100 } }, redlock: { clients: masters } }, 'lock.syncReplicas'],
  ])('refuses %s', (_label, options, option) => {
    expect(refusedOption(options)).toBe(option);
  });

  it('keeps given Redlock timings and a drift factor just below 0.5', () => {
    const config = resolveRedisLockConfig({
      redlock: { clients: masters, driftFactor: 0.49, requestTimeout: 1, retryJitter: 0, retryDelay: 1.9 },
    });
    expect(config.redlock).toMatchObject({ driftFactor: 0.49, requestTimeout: 1, retryJitter: 0, retryDelay: 1 });
  });

  it('says what to use for a drift factor', () => {
    expect(() => resolveRedisLockConfig({ redlock: { clients: masters, driftFactor: 0.5 } })).toThrow(
      'Invalid option `redlock.driftFactor`: got 0.5; use a number from 0 to below 0.5 (default 0.01).',
    );
  });

  it('tells unix sockets apart by path', () => {
    const clients = [{ path: '/run/a.sock' }, { path: '/run/b.sock' }, 'redis://m3'];
    expect(resolveRedisLockConfig({ redlock: { clients } }).redlock?.quorum).toBe(2);
    expect(refusedOption({ redlock: { clients: [{ path: '/run/a.sock' }, { path: '/run/a.sock' }, 'redis://m3'] } })).toBe(
      'redlock.clients[1]',
    );
  });
});

describe('resolveRedisLockConfig: delayQueue.topics', () => {
  it('keeps only topics split into more than one shard', () => {
    const topics = resolveRedisLockConfig({
      delayQueue: { topics: { 'order.expire': { shards: 4 }, 'mail.send': { shards: 1 }, audit: {} } },
    }).delayQueue.topics;
    expect([...topics]).toEqual([['order.expire', 4]]);
  });
});
