import { InvalidTopicError } from '../../core/errors/invalid-topic.error.js';
import type { RedisKeySpace, TopicKeys } from '../../core/keys/redis-key-space.js';
import { shardTopicName } from '../../core/keys/topic-name.js';
import type { TopicShardCounts } from '../../core/options/resolve-topic-shards.js';
import { parseTickJobId } from './tick-job-id.js';

/**
 * Where a topic's jobs live. A topic of one shard keeps the plain layout (`{topic}`), so turning
 * sharding on for a topic is a change of layout: drain it first (see `DelayQueueTopicOptions`).
 */
export class TopicShards {
  constructor(
    private readonly keySpace: RedisKeySpace,
    private readonly counts: TopicShardCounts,
  ) {}

  /** The topics split into more than one shard (`delayQueue.topics`), in the order configured. */
  sharded(): string[] {
    return [...this.counts.keys()];
  }

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

  /**
   * The shard index that holds job `id`: the same on every producer and consumer. A job of a group
   * goes to its group's shard, so that one script sees every job of the group. A repeatable
   * schedule's tick jobs (`repeat:<scheduleId>@<tick>`, see tick-job-id.ts) go where the schedule
   * itself lives (`forSchedule`), so the script that advances a schedule and enqueues its next tick
   * touches one cluster slot.
   */
  indexOf(topic: string, id: string, group?: string): number {
    const n = this.count(topic);
    if (n === 1) return 0;
    return fnv1a(group ?? parseTickJobId(id)?.scheduleId ?? id) % n;
  }

  /**
   * The shards to look in for job `id`, its own first. A job of a group lives on its group's shard
   * (one script sees the whole group), which a caller naming only the id cannot know: on a sharded
   * topic the others follow, to be tried when the job is not on its own.
   */
  searchOrder(topic: string, id: string): TopicKeys[] {
    const all = this.all(topic);
    if (all.length === 1) return all;
    const home = this.indexOf(topic, id);
    return [all[home], ...all.filter((_, i) => i !== home)];
  }

  /** The keys of the shard that holds repeatable schedule `scheduleId` and its tick jobs. */
  forSchedule(topic: string, scheduleId: string): TopicKeys {
    const n = this.count(topic);
    return this.all(topic)[n === 1 ? 0 : fnv1a(scheduleId) % n];
  }

  /** The keys of the shard that holds job `id` (of `group`, when it has one). */
  forJob(topic: string, id: string, group?: string): TopicKeys {
    return this.all(topic)[this.indexOf(topic, id, group)];
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
