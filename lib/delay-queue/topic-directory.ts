import { Injectable } from '@nestjs/common';
import { RedisKeySpace } from '../core/keys/redis-key-space.js';
import { assertValidTopic, shardTopicName } from '../core/keys/topic-name.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { DelayedHandlerExplorer } from './delayed-handler.explorer.js';
import { TopicShards } from './jobs/topic-shards.js';

/**
 * Which topics exist, for add-ons such as the dashboard and the metrics: the ones this application
 * handles or configures (known from bootstrap on), and the ones found in Redis. A sharded topic is
 * one topic here: its shards are reported as the topic. What a topic holds is `TopicInspector`'s.
 */
@Injectable()
export class TopicDirectory {
  constructor(
    private readonly connection: RedisConnection,
    private readonly keySpace: RedisKeySpace,
    private readonly shards: TopicShards,
    private readonly explorer: DelayedHandlerExplorer,
  ) {}

  /** Topics consumed by an `@OnDelayed` handler of this application (the ones the delay queue runs). */
  handledTopics(): readonly string[] {
    return this.explorer.handledTopics();
  }

  /**
   * The topics this application names in its own code and configuration, known from bootstrap on
   * (before any job): its `@OnDelayed` handlers' topics, then the topics split into shards in
   * `delayQueue.topics`.
   */
  applicationTopics(): string[] {
    return [...new Set([...this.handledTopics(), ...this.shards.sharded()])];
  }

  /**
   * Topics with at least one job (in any state) in Redis, found by SCAN on every master: at most
   * `limit` jobs hashes are looked at. The shards of a sharded topic are reported as the topic.
   */
  async topicsInRedis(limit: number): Promise<{ topics: string[]; truncated: boolean }> {
    const { keys, truncated } = await this.connection.scanKeys(this.keySpace.topicJobsPattern(), limit);
    const topics = new Set<string>();
    for (const key of keys) {
      const found = this.keySpace.topicOfJobsKey(key);
      if (found !== undefined && isValidTopic(found)) topics.add(this.topicOfShard(found));
    }
    return { topics: [...topics], truncated };
  }

  /** `hot#2` is shard 2 of `hot` when `hot` is configured with that many shards: reported as `hot`. */
  private topicOfShard(found: string): string {
    const hash = found.lastIndexOf('#');
    if (hash <= 0) return found;
    const topic = found.slice(0, hash);
    const count = this.shards.count(topic);
    for (let i = 0; i < count && count > 1; i++) if (shardTopicName(topic, i) === found) return topic;
    return found;
  }
}

function isValidTopic(name: string): boolean {
  try {
    assertValidTopic(name);
    return true;
  } catch {
    return false;
  }
}
