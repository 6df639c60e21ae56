import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { InvalidTopicError } from '../errors/invalid-topic.error.js';
import type { RedisKeySpace, TopicKeys } from '../keys/redis-key-space.js';
import { assertValidTopic } from './topic-name.js';

/** Most shards one topic may be split into. */
export const MAX_TOPIC_SHARDS = 256;

/**
 * Per-topic settings after validation: topic name -> shard count (only topics with more than one
 * shard). A Map, not an object: topics such as `constructor` or `__proto__` must not find Object's own.
 */
export type TopicShardCounts = ReadonlyMap<string, number>;

/**
 * Validates `delayQueue.topics` (see `DelayQueueTopicOptions`) and keeps the topics split into
 * more than one shard.
 *
 * @throws InvalidOptionsError naming the topic and the option
 */
export function resolveTopicShards(topics: unknown): TopicShardCounts {
  if (topics === undefined) return new Map();
  if (topics === null || typeof topics !== 'object' || Array.isArray(topics)) {
    throw new InvalidOptionsError('delayQueue.topics', "expected an object: { 'topic.name': { shards: 3 } }");
  }
  const counts = new Map<string, number>();
  for (const [topic, settings] of Object.entries(topics as Record<string, unknown>)) {
    const option = `delayQueue.topics[${JSON.stringify(topic)}]`;
    try {
      assertValidTopic(topic, option);
    } catch (error) {
      throw new InvalidOptionsError(option, (error as Error).message);
    }
    if (settings === null || typeof settings !== 'object') throw new InvalidOptionsError(option, 'expected { shards: number }');
    const shards = (settings as { shards?: unknown }).shards ?? 1;
    if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > MAX_TOPIC_SHARDS) {
      throw new InvalidOptionsError(`${option}.shards`, `got ${String(shards)}; use a whole number from 1 to ${MAX_TOPIC_SHARDS}`);
    }
    if (shards > 1) {
      try {
        assertValidTopic(shardTopicName(topic, shards - 1), option);
      } catch {
        throw new InvalidOptionsError(option, `the topic name is too long for ${shards} shards ('${topic}#${shards - 1}' exceeds 128 characters)`);
      }
      counts.set(topic, shards);
    }
  }
  return counts;
}

/** The name whose hash tag holds shard `index` of `topic`: `topic#index` (DESIGN.md, "Scale-out"). */
export function shardTopicName(topic: string, index: number): string {
  return `${topic}#${index}`;
}

/**
 * Where a topic's jobs live. A topic of one shard keeps the plain layout (`{topic}`), so turning
 * sharding on for a topic is a change of layout: drain it first (see `DelayQueueTopicOptions`).
 */
export class TopicShards {
  constructor(
    private readonly keySpace: RedisKeySpace,
    private readonly counts: TopicShardCounts,
  ) {}

  /** How many shards `topic` has (1 when not configured). */
  count(topic: string): number {
    return this.counts.get(topic) ?? 1;
  }

  /** Every shard's keys, in shard order. */
  all(topic: string): TopicKeys[] {
    this.assertNotAShardName(topic);
    const n = this.count(topic);
    if (n === 1) return [this.keySpace.topic(topic)];
    return Array.from({ length: n }, (_, i) => this.keySpace.topic(shardTopicName(topic, i)));
  }

  /** The shard index that holds job `id`: the same on every producer and consumer. */
  indexOf(topic: string, id: string): number {
    const n = this.count(topic);
    return n === 1 ? 0 : fnv1a(id) % n;
  }

  /** The keys of the shard that holds job `id`. */
  forJob(topic: string, id: string): TopicKeys {
    return this.all(topic)[this.indexOf(topic, id)];
  }

  /**
   * `hot#1` written directly would land in the keys of shard 1 of the sharded topic `hot` and
   * bypass its routing by id (get/cancel would look in another shard): refused.
   */
  private assertNotAShardName(topic: string): void {
    const match = /^(.*)#(\d+)$/.exec(topic);
    if (match && this.count(match[1]) > 1) {
      throw new InvalidTopicError(
        topic,
        `it names a shard of the sharded topic ${JSON.stringify(match[1])}; use ${JSON.stringify(match[1])} itself`,
      );
    }
  }
}

/** 32-bit FNV-1a over the UTF-16 code units: cheap, stable across processes and versions. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
