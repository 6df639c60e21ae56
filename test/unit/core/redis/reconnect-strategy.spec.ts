import { Redis, type RedisOptions } from 'ioredis';
import {
  lockReconnectStrategy,
  RECONNECT_FIRST_DELAY_MS,
  RECONNECT_MAX_DELAY_MS,
} from '../../../../lib/core/redis/lock-reconnect-strategy.js';
import { reconnectOverrideFor, withLockReconnect } from '../../../../lib/core/redis/reconnect-strategy.js';

/*
 * The reconnect policy of the connections the module creates: quick after a blip (a re-sent reply
 * must land within a Redlock requestTimeout, 200 ms in the late-masters spec), bounded after a long
 * outage, never in step across clients, and never in place of a strategy the user chose.
 */

const low = () => 0;
const high = () => 0.999_999;

describe('lockReconnectStrategy', () => {
  it('tries again within about 30 ms of the first drop', () => {
    expect(lockReconnectStrategy(1, low)).toBe(RECONNECT_FIRST_DELAY_MS);
    expect(lockReconnectStrategy(1, high)).toBeLessThanOrEqual(31);
    // ioredis 6's own default may wait 250 ms here.
    expect(lockReconnectStrategy(1, high)).toBeLessThan(50);
  });

  it('doubles per failed attempt', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => lockReconnectStrategy(n, low))).toEqual([25, 50, 100, 200, 400, 800]);
  });

  it('stops growing at 1 s, plus at most a quarter of jitter, however long the outage', () => {
    for (const attempt of [7, 8, 20, 100, 10_000, Number.MAX_SAFE_INTEGER]) {
      expect(lockReconnectStrategy(attempt, low)).toBe(RECONNECT_MAX_DELAY_MS);
      expect(lockReconnectStrategy(attempt, high)).toBeLessThanOrEqual(1_250);
    }
  });

  it('adds up to 25 % random jitter, so clients cut off together spread their attempts', () => {
    expect(lockReconnectStrategy(4, () => 0.5)).toBe(225);
    const delays = new Set(Array.from({ length: 200 }, () => lockReconnectStrategy(6)));
    expect(delays.size).toBeGreaterThan(20);
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(800);
      expect(delay).toBeLessThanOrEqual(1_000);
    }
  });

  it('never gives up: every attempt gets a delay', () => {
    for (let attempt = 1; attempt <= 500; attempt++) expect(Number.isInteger(lockReconnectStrategy(attempt))).toBe(true);
  });

  it('treats a zero or fractional attempt count as the first attempts', () => {
    expect(lockReconnectStrategy(0, low)).toBe(25);
    expect(lockReconnectStrategy(2.7, low)).toBe(50);
  });

  it('fails a command queued while Redis is down after 16-20 s (ioredis flushes at attempt 21, maxRetriesPerRequest 20)', () => {
    const waited = (random: () => number) => {
      let total = 0;
      for (let attempt = 1; attempt <= 20; attempt++) total += lockReconnectStrategy(attempt, random);
      return total;
    };
    expect(waited(low)).toBe(25 + 50 + 100 + 200 + 400 + 800 + 14 * 1_000);
    expect(waited(high)).toBeLessThan(20_000);
  });
});

describe('withLockReconnect', () => {
  it('adds the policy to options that set no retryStrategy', () => {
    expect(withLockReconnect({ host: 'redis', port: 6380 })).toEqual({ host: 'redis', port: 6380, retryStrategy: lockReconnectStrategy });
    expect(withLockReconnect({ retryStrategy: undefined }).retryStrategy).toBe(lockReconnectStrategy);
  });

  it("keeps the user's retryStrategy, null (never reconnect) included", () => {
    const mine = (times: number) => times * 7;
    expect(withLockReconnect({ retryStrategy: mine }).retryStrategy).toBe(mine);
    expect(withLockReconnect({ retryStrategy: null as unknown as undefined }).retryStrategy).toBeNull();
  });
});

describe('reconnectOverrideFor (copies of a client: subscriber, blocking readers)', () => {
  const clients: Redis[] = [];
  const client = (options: RedisOptions) => {
    const created = new Redis({ lazyConnect: true, ...options });
    clients.push(created);
    return created;
  };
  afterAll(() => clients.forEach((c) => c.disconnect()));

  it("gives the policy to copies of a client on ioredis' default strategy", () => {
    const original = client({});
    const copy = original.duplicate(reconnectOverrideFor(original));
    clients.push(copy);
    expect(copy.options.retryStrategy).toBe(lockReconnectStrategy);
    expect(original.options.retryStrategy).not.toBe(lockReconnectStrategy);
  });

  it('leaves copies of a client with a strategy of its own to inherit it', () => {
    const mine = (times: number) => times * 7;
    expect(reconnectOverrideFor(client({ retryStrategy: mine }))).toEqual({});
    expect(reconnectOverrideFor(client({ retryStrategy: lockReconnectStrategy }))).toEqual({});
  });
});
