import { escapeKeyPart, unescapeKeyPart } from './escape-key-part.js';

/** The semaphores' key family (`<prefix>:sem:{name}`), and what their errors call a name. */
const SEMAPHORE_FAMILY = 'sem';
const SEMAPHORE_KEY = 'semaphore key';

/**
 * The one place that knows the Redis key layout: `<prefix>:<kind>:{<escaped name>}[:<part>]`, one
 * kind per capability (`lock`, `sem`, `dq`), the parts listed by each method below.
 *
 * Every key of one lock or one topic carries the same hash tag, so each script touches a single
 * cluster slot. User names are escaped before they are placed between the braces.
 */
export class RedisKeySpace {
  constructor(readonly prefix: string) {}

  /** The keys of one named lock: owner hash, fencing counter, wake channel, fair queue. */
  lock(name: string): LockKeys {
    const base = `${this.prefix}:lock:{${escapeKeyPart(name)}}`;
    return {
      name,
      owners: base,
      fence: `${base}:fence`,
      wakeChannel: `${base}:wake`,
      queue: `${base}:queue`,
      timeouts: `${base}:timeouts`,
      leases: `${base}:leases`,
      waitingWriters: `${base}:writers`,
    };
  }

  /** The keys of one named semaphore. */
  semaphore(name: string): SemaphoreKeys {
    const keys = this.lockKindKeys(SEMAPHORE_FAMILY, name, ['fence', 'wake', 'grants'], SEMAPHORE_KEY);
    return { name, permits: keys.base, fence: keys.fence, wakeChannel: keys.wake, grants: keys.grants };
  }

  /**
   * The keys of one lock of a kind with a key family of its own (beside `lock` and `sem`, which
   * `lock()` and `semaphore()` lay out): `<prefix>:<family>:{<escaped name>}` as `base`, and
   * `<base>:<part>` for each of `parts`. `what` names the name in an error (`'latch key'`).
   */
  lockKindKeys<P extends string>(family: string, name: string, parts: readonly P[], what: string): LockKindKeys<P> {
    const base = `${this.prefix}:${family}:{${escapeKeyPart(name, what)}}`;
    const keys: Record<string, string> = { name, base };
    for (const part of parts) keys[part] = `${base}:${part}`;
    return keys as LockKindKeys<P>;
  }

  /** SCAN MATCH pattern of the `base` key of every lock of `family` (see `lockKindKeys`). */
  lockKindPattern(family: string): string {
    return `${escapeGlob(`${this.prefix}:${family}:`)}{*}`;
  }

  /** The name of the lock of `family` whose `base` key is `key`; undefined for any other key. */
  lockKindNameOf(family: string, key: string, what: string): string | undefined {
    return nameInHashTag(key, `${this.prefix}:${family}:`, '', what);
  }

  /** The keys of one delayed-job topic. */
  topic(topic: string): TopicKeys {
    const base = `${this.prefix}:dq:{${escapeKeyPart(topic, 'topic name')}}`;
    return {
      topic,
      due: `${base}:due`,
      jobs: `${base}:jobs`,
      active: `${base}:active`,
      dead: `${base}:dead`,
      marker: `${base}:marker`,
      fence: `${base}:fence`,
      paused: `${base}:paused`,
      rateLog: `${base}:rate`,
      blocked: `${base}:blocked`,
      drained: `${base}:drained`,
      groupsReady: `${base}:groups-ready`,
      groupsOut: `${base}:groups-out`,
      groupLimit: `${base}:group-limit`,
      priority: `${base}:priority`,
      prioritized: `${base}:prioritized`,
      cancelled: `${base}:cancelled`,
      cancelChannel: `${base}:cancel`,
      completed: `${base}:completed`,
      results: `${base}:results`,
      waited: `${base}:waited`,
      outcomeChannel: `${base}:outcomes`,
      logsPrefix: `${base}:logs:`,
      repeats: `${base}:repeats`,
      repeatNext: `${base}:repeat-next`,
      repeatLast: `${base}:repeat-last`,
      repeatRemoved: `${base}:repeat-removed`,
      repeatDefined: `${base}:repeat-defined`,
      repeatRuns: `${base}:repeat-runs`,
    };
  }

  /** SCAN MATCH pattern of every lock's owner hash (`<prefix>:lock:{name}`); the lock's other keys end after the brace. */
  lockOwnersPattern(): string {
    return `${escapeGlob(`${this.prefix}:lock:`)}{*}`;
  }

  /** The name of the lock whose owner hash is `key`; undefined for any other key. */
  lockNameOf(key: string): string | undefined {
    return nameInHashTag(key, `${this.prefix}:lock:`, '', 'lock key');
  }

  /** SCAN MATCH pattern of every semaphore's permit set (`<prefix>:sem:{name}`). */
  semaphorePermitsPattern(): string {
    return this.lockKindPattern(SEMAPHORE_FAMILY);
  }

  /** The name of the semaphore whose permit set is `key`; undefined for any other key. */
  semaphoreNameOf(key: string): string | undefined {
    return this.lockKindNameOf(SEMAPHORE_FAMILY, key, SEMAPHORE_KEY);
  }

  /**
   * SCAN MATCH pattern of every key of one topic shard (`<prefix>:dq:{topic}:*`, `topic` a topic or a
   * shard name `topic#n`): its jobs, schedules, groups, markers, operation records and any per-job
   * key, all under its hash tag.
   */
  topicFamilyPattern(topic: string): string {
    return `${escapeGlob(`${this.prefix}:dq:{${escapeKeyPart(topic, 'topic name')}}:`)}*`;
  }

  /** SCAN MATCH pattern of every topic's jobs hash (`<prefix>:dq:{topic}:jobs`): a topic with a job in any state has one. */
  topicJobsPattern(): string {
    return `${escapeGlob(`${this.prefix}:dq:`)}{*}:jobs`;
  }

  /** The topic (or shard name, `topic#n`) whose jobs hash is `key`; undefined for any other key. */
  topicOfJobsKey(key: string): string | undefined {
    return nameInHashTag(key, `${this.prefix}:dq:`, ':jobs', 'topic name');
  }
}

/**
 * The name in `<before>{<escaped name>}<after>`, or undefined when `key` has another shape or is not
 * what escaping that name gives (a key this library cannot have written: no second key per name).
 */
function nameInHashTag(key: string, before: string, after: string, what: string): string | undefined {
  if (!key.startsWith(`${before}{`) || !key.endsWith(`}${after}`)) return undefined;
  const tag = key.slice(before.length + 1, key.length - after.length - 1);
  if (tag.length === 0 || tag.includes('}')) return undefined;
  const name = unescapeKeyPart(tag);
  try {
    return escapeKeyPart(name, what) === tag ? name : undefined;
  } catch {
    return undefined;
  }
}

/** Escapes the glob characters of SCAN MATCH (`*`, `?`, `[`, `]`, `\`) in a literal part of a pattern. */
function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (ch) => `\\${ch}`);
}

export interface LockKeys {
  readonly name: string;
  readonly owners: string;
  readonly fence: string;
  readonly wakeChannel: string;
  /** Fair lock: waiters in arrival order, and each waiter's liveness deadline. */
  readonly queue: string;
  readonly timeouts: string;
  /** Read/write lock: each holder's lease deadline, and the writers waiting (they block new readers). */
  readonly leases: string;
  readonly waitingWriters: string;
}

/** The keys of one lock of a kind with its own key family (see `RedisKeySpace.lockKindKeys`). */
export type LockKindKeys<P extends string> = { readonly name: string; readonly base: string } & { readonly [part in P]: string };

export interface SemaphoreKeys {
  readonly name: string;
  readonly permits: string;
  readonly fence: string;
  readonly wakeChannel: string;
  /** Each held permit's fencing token, so an acquire that runs twice answers with the same one. */
  readonly grants: string;
}

export interface TopicKeys {
  readonly topic: string;
  readonly due: string;
  readonly jobs: string;
  readonly active: string;
  readonly dead: string;
  readonly marker: string;
  /**
   * The shard's fencing counter: the last claim token handed out on it (`JobContext.fencingToken`).
   * One counter per topic shard, not per job: a claim batch reads and writes it once whatever the
   * number of jobs it takes, Redis memory stays one key per shard whatever the number of job ids (a
   * per-job counter would have to outlive its job to cover an id scheduled again), and the tokens of
   * one shard are ordered by claim. The job's own last token (kept in its body) is a floor as well,
   * so a job's tokens only grow even when the counter was lost and the server clock went back.
   */
  readonly fence: string;
  /** Present while the topic is paused (`DelayQueueService.pause`): claims take nothing, running jobs finish. */
  readonly paused: string;
  /** zset of the shard's recent claims (member -> server µs) counted by a consumer's `rateLimit` (a sliding log). */
  readonly rateLog: string;
  /**
   * Present while a handler's `JobRateLimitedError` blocks the shard's claims: its value is the server
   * ms when the block ends, and it expires then (see topic-block-lua-snippet.ts).
   */
  readonly blocked: string;
  /**
   * The shard's fencing counter as the last `drain()` found it: a job claimed under a token at or below
   * it and handed back unstarted is removed (see drop-job-lua-snippet.ts).
   */
  readonly drained: string;
  /** zset group -> due score of its next job: the groups that may start a job now (see the groups snippet). */
  readonly groupsReady: string;
  /** hash group -> its jobs out of the group's queue (running, or waiting for a retry). */
  readonly groupsOut: string;
  /** The topic's `groupConcurrency` (jobs of one group at a time), written by its consumers; absent: 1. */
  readonly groupLimit: string;
  /**
   * Present once a job with a priority was scheduled on the shard: hash `ready` -> the due score up to
   * which every due job is also in `prioritized`, `seq` -> jobs made ready so far. Named in Lua from the
   * shard's prefix (topic-base-lua-snippet.ts); here for what removes a topic's keys.
   */
  readonly priority: string;
  /** zset id -> priority * 2^31 + seq: the shard's due jobs, each also in `due`, in the order the claim takes them. */
  readonly prioritized: string;
  /**
   * Tombstones of jobs cancelled while they ran: zset `<claim token>:<id>` -> the job's visibility
   * deadline when it was cancelled. A consumer that missed the cancel notice learns of it at its next
   * visibility extension, which comes before that deadline; expired tombstones are trimmed.
   */
  readonly cancelled: string;
  /** Pub/sub channel (SPUBLISH on a cluster) where a cancel of a running job is announced: `<claim token>:<id>`. */
  readonly cancelChannel: string;
  /**
   * zset id -> finishedAt ms (Redis clock) of the completed jobs a consumer with `keepCompleted`
   * keeps; their bodies stay in `jobs` (so a kept id de-duplicates a schedule) until trimmed.
   */
  readonly completed: string;
  /** hash id -> the handler's return value as JSON, for kept completed jobs that returned one. */
  readonly results: string;
  /**
   * hash id -> publish command ('publish' | 'spublish') of the jobs some process waits for
   * (`waitFor`, see scripts/watch-job.lua.ts); an entry goes when its job finishes. The Lua names it
   * from the shard's prefix (lua-snippets.ts, announceOutcome): the same name.
   */
  readonly waited: string;
  /**
   * Pub/sub channel (SPUBLISH on a cluster) where a waited job's outcome is announced:
   * `<kind><id length>:<id><detail>`, kind `c` completed (detail: its kept result JSON, or none),
   * `d` dead (its failure as stored), `x` cancelled.
   */
  readonly outcomeChannel: string;
  /**
   * A job's log (`JobContext.log`) is the list `<logsPrefix><id>`, oldest line first, bounded per job
   * (jobs/delay-queue.constants.ts, JOB_LOG_MAX_LINES). The Lua names it from the shard's prefix
   * (topic-base-lua-snippet.ts, logsKey): the same name. It goes with its job's body.
   */
  readonly logsPrefix: string;
  /** hash schedule id -> its stored definition (the repeatable schedules; see repeat-lua-snippets.ts for these six keys). */
  readonly repeats: string;
  /** zset schedule id -> the tick whose job was enqueued last (epoch ms). */
  readonly repeatNext: string;
  /** zset schedule id -> the last tick a consumer claimed (epoch ms). */
  readonly repeatLast: string;
  /** zset schedule id -> when `removeRepeat()` removed it (server µs), kept a day. */
  readonly repeatRemoved: string;
  /** zset schedule id -> the server µs from which its stored definition is known current. */
  readonly repeatDefined: string;
  /** hash schedule id -> its ticks queued so far. */
  readonly repeatRuns: string;
}
