import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { assertValidTopic, shardTopicName } from '../keys/topic-name.js';
import { errorMessage } from '../errors/error-message.js';
import { optionValidator as validate } from './option-validation.js';

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
      throw new InvalidOptionsError(option, errorMessage(error));
    }
    if (settings === null || typeof settings !== 'object') throw new InvalidOptionsError(option, 'expected { shards: number }');
    const shards = validate.wholeNumber(`${option}.shards`, (settings as { shards?: unknown }).shards, {
      min: 1,
      max: MAX_TOPIC_SHARDS,
      default: 1,
    });
    if (shards > 1) {
      try {
        assertValidTopic(shardTopicName(topic, shards - 1), option);
      } catch {
        throw new InvalidOptionsError(
          option,
          `the topic name is too long for ${shards} shards ('${topic}#${shards - 1}' exceeds 128 characters)`,
        );
      }
      counts.set(topic, shards);
    }
  }
  return counts;
}
