import { InvalidTopicError } from '../../../../lib/index.js';
import { shardTopicName } from '../../../../lib/core/keys/topic-name.js';
import { MAX_TOPIC_SHARDS, resolveTopicShards } from '../../../../lib/core/options/resolve-topic-shards.js';
import { TopicShards } from '../../../../lib/delay-queue/jobs/topic-shards.js';
import { RedisKeySpace } from '../../../../lib/core/keys/redis-key-space.js';
import { expectInvalidOption } from '../../../support/expect-invalid-option.js';
import { thrownBy } from '../../../support/thrown.js';

const keySpace = new RedisKeySpace('rl');

describe('resolveTopicShards: the delayQueue.topics option', () => {
  it('keeps the topics of more than one shard, in a Map', () => {
    const counts = resolveTopicShards({ hot: { shards: 3 }, cold: { shards: 1 }, plain: {} });
    expect(counts).toEqual(new Map([['hot', 3]]));
    expect(resolveTopicShards(undefined)).toEqual(new Map());
  });

  it("finds nothing of Object's own for topics named like its members", () => {
    const counts = resolveTopicShards(JSON.parse('{"__proto__": {"shards": 2}, "constructor": {"shards": 5}}'));
    expect([...counts]).toEqual([
      ['__proto__', 2],
      ['constructor', 5],
    ]);
    expect(new TopicShards(keySpace, resolveTopicShards({})).count('constructor')).toBe(1);
  });

  it.each<[string, unknown, string]>([
    ['an array', [], 'delayQueue.topics'],
    ['null', null, 'delayQueue.topics'],
    ['a topic name with a space', { 'bad topic': { shards: 2 } }, 'delayQueue.topics["bad topic"]'],
    ['settings that are not an object', { hot: 3 }, 'delayQueue.topics["hot"]'],
    ['0 shards', { hot: { shards: 0 } }, 'delayQueue.topics["hot"].shards'],
    ['a fractional shard count', { hot: { shards: 2.5 } }, 'delayQueue.topics["hot"].shards'],
    ['more than the most shards', { hot: { shards: MAX_TOPIC_SHARDS + 1 } }, 'delayQueue.topics["hot"].shards'],
    ['a name too long for its shard suffix', { ['t'.repeat(127)]: { shards: 10 } }, `delayQueue.topics["${'t'.repeat(127)}"]`],
  ])('refuses %s, naming the option', (_label, topics, option) => {
    expectInvalidOption(
      thrownBy(() => resolveTopicShards(topics)),
      option,
    );
  });

  it('accepts the longest name whose last shard still fits', () => {
    expect(resolveTopicShards({ ['t'.repeat(126)]: { shards: 10 } }).get('t'.repeat(126))).toBe(10);
  });
});

describe("TopicShards: where a topic's jobs live", () => {
  const shards = new TopicShards(keySpace, resolveTopicShards({ hot: { shards: 3 }, wide: { shards: 7 } }));

  it('keeps the plain layout for a topic of one shard', () => {
    expect(shards.count('cold')).toBe(1);
    expect(shards.all('cold')).toEqual([keySpace.topic('cold')]);
    expect(shards.indexOf('cold', 'any-id')).toBe(0);
    expect(shards.forJob('cold', 'any-id').due).toBe('rl:dq:{cold}:due');
  });

  it('gives each shard of a split topic its own hash tag, `topic#index`', () => {
    expect(shards.count('hot')).toBe(3);
    expect(shards.all('hot').map((keys) => keys.jobs)).toEqual(['rl:dq:{hot#0}:jobs', 'rl:dq:{hot#1}:jobs', 'rl:dq:{hot#2}:jobs']);
    expect(shardTopicName('hot', 2)).toBe('hot#2');
  });

  it('routes a job id by 32-bit FNV-1a of its UTF-16 code units, the same in every process and version', () => {
    // FNV-1a('a') = 0xe40c292c (the published test vector): 3826002220 % 3 = 1, % 7 = 5.
    expect(shards.indexOf('hot', 'a')).toBe(1);
    expect(shards.indexOf('wide', 'a')).toBe(5);
    expect(shards.indexOf('hot', 'order-2')).toBe(1);
    expect(shards.indexOf('wide', 'order-2')).toBe(0);
    expect(shards.indexOf('hot', 'ünï')).toBe(2);
    expect(shards.forJob('wide', 'job:42')).toEqual(keySpace.topic('wide#6'));
  });

  it('spreads ids over every shard', () => {
    const perShard = new Array<number>(7).fill(0);
    for (let i = 0; i < 7_000; i++) perShard[shards.indexOf('wide', `order-${i}`)]++;
    for (const count of perShard) expect(count).toBeGreaterThan(800);
  });

  it("refuses a shard's own name for a split topic, and allows the same shape for others", () => {
    expect(() => shards.all('hot#1')).toThrow(InvalidTopicError);
    expect(() => shards.forJob('hot#1', 'x')).toThrow(/names a shard of the sharded topic "hot"; use "hot" itself/);
    expect(shards.all('cold#1')).toEqual([keySpace.topic('cold#1')]);
  });
});
