import { InvalidTopicError } from '../errors/invalid-topic.error.js';

const TOPIC_PATTERN = /^[A-Za-z0-9_.:/#-]{1,128}$/;

/**
 * Topics appear in key names, log lines and metrics, so they are held to a narrower alphabet than
 * lock keys (which are escaped instead): a typo like a space or a brace fails loudly here.
 */
export function assertValidTopic(topic: unknown, where?: string): asserts topic is string {
  if (typeof topic !== 'string') throw new InvalidTopicError(topic, 'a topic must be a string', where);
  if (!TOPIC_PATTERN.test(topic)) {
    const problem =
      topic.length === 0
        ? 'a topic must not be empty'
        : topic.length > 128
          ? 'a topic may be at most 128 characters long'
          : 'it contains a character that is not allowed';
    throw new InvalidTopicError(topic, problem, where);
  }
}

/** The name whose hash tag holds shard `index` of `topic`: `topic#index` (docs/running-at-scale.md, "Hot topics: sharding"). */
export function shardTopicName(topic: string, index: number): string {
  return `${topic}#${index}`;
}
