import type { Redis } from 'ioredis';
import { InvalidOptionsError } from '../../lib/index.js';
import { resolveRedisLockConfig } from '../../lib/core/options/resolve-redis-lock-config.js';
import { rawRedis, testRedisUrl } from '../support/test-app.js';
import { describeDelayedJobScenarios } from './support/delayed-job-scenarios.js';

// Sharding is a key layout, not a cluster feature: the same scenarios hold on one Redis.
describe('sharded topics on a single Redis', () => {
  let raw: Redis | undefined;
  const target = { redis: () => testRedisUrl(), raw: () => (raw ??= rawRedis()) };
  afterAll(() => raw?.disconnect());

  describeDelayedJobScenarios('topics split into 4 shards', target, 4);
});

describe('delayQueue.topics options', () => {
  it.each([
    [{ 'a.b': { shards: 0 } }, /delayQueue\.topics\["a\.b"\]\.shards.*0/],
    [{ 'a.b': { shards: 2.5 } }, /shards.*2\.5/],
    [{ 'a.b': { shards: 257 } }, /shards.*257/],
    [{ 'bad topic': { shards: 2 } }, /delayQueue\.topics\["bad topic"\]/],
    [{ ['x'.repeat(127)]: { shards: 20 } }, /too long for 20 shards/],
    [[] as unknown, /expected an object/],
  ])('refuses %j at bootstrap, naming the option', (topics, message) => {
    expect(() => resolveRedisLockConfig({ delayQueue: { topics: topics as never } })).toThrow(InvalidOptionsError);
    expect(() => resolveRedisLockConfig({ delayQueue: { topics: topics as never } })).toThrow(message);
  });

  it('keeps only topics split into more than one shard', () => {
    expect(resolveRedisLockConfig({ delayQueue: { topics: { a: { shards: 1 }, b: { shards: 6 }, c: {} } } }).delayQueue.topics).toEqual(
      new Map([['b', 6]]),
    );
  });
});
