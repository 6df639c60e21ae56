import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';
import { LUA_TOPIC_BLOCK } from './topic-block-lua-snippet.js';

/** One shard's counts, as topic-stats answers them (the inspector adds up a sharded topic's). */
export interface ShardStats {
  /** Jobs in DUE: the due ones and those due later (not the jobs in a group's queue). */
  readonly waiting: number;
  /** Of the waiting, those due now. */
  readonly due: number;
  readonly active: number;
  readonly dead: number;
  /** Repeatable schedules. */
  readonly schedules: number;
  /** Kept completed jobs (including, until trimmed, the old record of an id scheduled again). */
  readonly completed: number;
  readonly paused: boolean;
  /** Jobs waiting in their group's queue. */
  readonly grouped: number;
  /** Groups with a job out (running or waiting for a retry). */
  readonly busyGroups: number;
  /** Groups whose turn has come with a job due now (on `<shard>:groups-ready`, scored now or earlier). */
  readonly readyGroups: number;
  /** The server ms the shard's block (`JobRateLimitedError`, topic-block-lua-snippet.ts) ends; -1 when not blocked. */
  readonly blockedUntilMs: number;
}

/**
 * Counts a topic shard's jobs by state, and its repeatable schedules, in one snapshot. Read-only.
 *
 * KEYS by name (the contract below): the five topic keys, the schedules hash of
 * repeat-lua-snippets.ts, the completed zset (complete-job-lua-snippet.ts), the pause flag and the
 * block key (topic-block-lua-snippet.ts). No ARGV.
 *
 * Returns { waiting, due now, active, dead, schedules, completed, paused (0|1), waiting in their
 * group's queue, groups with a job out, the block's end in server ms (-1: none), groups whose next
 * job is due now and may start (their turn has come: group-lua-snippet.ts) }, decoded into
 * ShardStats. Each job body is in exactly one of DUE, ACTIVE, DEAD, its group's queue or the
 * completed set, so the group-queued are the rest of JOBS.
 */
export const topicStatsScript = new JobScript(
  'topicStats',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'repeats', 'completed', 'paused', 'blocked'],
    args: {},
    decode: decodeShardStats,
  },
  `
local schedules, completed, paused = redis.call('hlen', KEY.repeats), redis.call('zcard', KEY.completed), redis.call('exists', KEY.paused)
local waiting, active, dead = redis.call('zcard', DUE), redis.call('zcard', ACTIVE), redis.call('zcard', DEAD)
local inGroupQueues = redis.call('hlen', JOBS) - waiting - active - dead - completed
local dueNow = '(' .. fmt((nowMs + 1) * SLOTS)
return { waiting, redis.call('zcount', DUE, '-inf', dueNow), active, dead, schedules, completed, paused,
         math.max(0, inGroupQueues), redis.call('hlen', GROUPS_OUT), blockEndOf(KEY.blocked),
         redis.call('zcount', GROUPS_READY, '-inf', dueNow) }
`,
  [LUA_TOPIC_PRELUDE, LUA_TOPIC_BLOCK],
);

function decodeShardStats(reply: unknown): ShardStats {
  const [waiting, due, active, dead, schedules, completed, paused, grouped, busyGroups, blockedUntilMs, readyGroups] = (
    reply as number[]
  ).map(Number);
  return { waiting, due, active, dead, schedules, completed, paused: paused === 1, grouped, busyGroups, blockedUntilMs, readyGroups };
}
