import { JobScript } from './job-script.js';
import { LUA_TOPIC_BLOCK } from './topic-block-lua-snippet.js';

/**
 * Blocks a shard's claims until a server ms (topic-block-lua-snippet.ts): the other shards of a
 * sharded topic, after a handler's `JobRateLimitedError` blocked its job's own shard
 * (postpone-rate-limited-job), until the end that shard's script set. A block ending later stays.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the shard's block key; the
 * block's end (server ms).
 *
 * Returns the shard's block end in server ms (-1: none, the end has passed), decoded as
 * { blockedUntilMs }. Safe to run twice: the end is absolute, so a second run sets what the first did.
 */
export const blockTopicScript = new JobScript(
  'blockTopic',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'blocked'],
    args: { untilMs: 'int' },
    decode: (reply) => ({ blockedUntilMs: Number(reply) }),
  },
  `
return blockUntil(KEY.blocked, ARG.untilMs)
`,
  [LUA_TOPIC_BLOCK],
);
