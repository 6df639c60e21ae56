import { Injectable } from '@nestjs/common';
import { InvalidJobError } from '../core/errors/invalid-job.error.js';
import { RedisKeySpace, type TopicKeys } from '../core/keys/redis-key-space.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { scanKeys } from '../core/redis/scan-keys.js';
import { DUE_SCORE_SLOTS } from './jobs/delay-queue.constants.js';
import { DelayQueueOrchestrator } from './delay-queue.orchestrator.js';
import type { DelayedJob, DelayQueueStats } from './interfaces/delayed-job.interface.js';
import { decodeHeader, decodeJobLeniently } from './jobs/job-codec.js';
import { JobWriter } from './writer/job-writer.js';
import { completedReadScriptKeys, topicScriptKeys, topicStatsScriptKeys } from './jobs/script-keys.js';
import { cancelWaitingJobScript } from './scripts/cancel-waiting-job.lua.js';
import { deleteDeadJobScript } from './scripts/delete-dead-job.lua.js';
import { listJobsScript } from './scripts/list-jobs.lua.js';
import { readDeadLettersScript } from './scripts/read-dead-letters.lua.js';
import { readJobScript } from './scripts/read-job.lua.js';
import { topicStatsScript } from './scripts/topic-stats.lua.js';
import { assertValidTopic } from '../core/keys/topic-name.js';
import { shardTopicName } from '../core/keys/topic-name.js';
import { TopicShards } from './jobs/topic-shards.js';
import { errorMessage } from '../core/errors/error-message.js';
import type { RepeatInfo } from './interfaces/repeat-options.interface.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';

/**
 * The states a job list can show; 'due' and 'scheduled' split the waiting jobs at the server's now;
 * 'completed' lists the jobs kept by a consumer with `keepCompleted`.
 */
export type ListedJobState = 'due' | 'scheduled' | 'active' | 'dead' | 'completed';

/** Every `ListedJobState`, in the order a page shows them. */
export const LISTED_JOB_STATES: readonly ListedJobState[] = ['due', 'scheduled', 'active', 'dead', 'completed'];

/** A job as listed: its payload shortened to a preview. */
export interface ListedJob {
  /** The job id. */
  readonly id: string;
  /** Where the job is now. */
  readonly state: ListedJobState;
  /** Delivery attempts so far. */
  readonly attempts: number;
  /** The job's `maxAttempts`, when known. */
  readonly maxAttempts?: number;
  /** When the job was scheduled (epoch ms). */
  readonly createdAt: number;
  /** Due time of a waiting job. */
  readonly dueAt?: number;
  /** Visibility deadline of a running job. */
  readonly visibleUntil?: number;
  /** When a dead job died. */
  readonly diedAt?: number;
  /** When a kept completed job finished. */
  readonly finishedAt?: number;
  /** The failure message of the last failed attempt, if any. */
  readonly lastError?: string;
  /** The last progress its handler recorded (`JobContext.progress`), if any. */
  readonly progress?: unknown;
  /** The payload as JSON text, shortened to a preview. */
  readonly payloadPreview: string;
  /** Length of the whole payload's JSON text. */
  readonly payloadLength: number;
}

/** The first jobs of one topic in one state. */
export interface ListedJobs {
  /** The topic listed. */
  readonly topic: string;
  /** The state listed. */
  readonly state: ListedJobState;
  /** The Redis server's clock at the read (epoch ms). */
  readonly now: number;
  /** Jobs in that state, of which `jobs` are the first `limit`. */
  readonly total: number;
  /** The first `limit` jobs in that state. */
  readonly jobs: ListedJob[];
}

/** What `cancelWaiting` found. */
export type CancelWaitingOutcome = 'cancelled' | 'running' | 'not-waiting';

/**
 * The read side of the delay queue: one job, a topic's counts, dead letters and repeatable
 * schedules (what `DelayQueueService` answers with), and for add-ons such as the dashboard which
 * topics exist (handled here, or found in Redis) and the jobs of a topic by state with payload
 * previews; besides, the two careful actions an operator needs: deleting only a dead letter and
 * cancelling only a waiting job. A sharded topic is one topic here: reads merge its shards, and an
 * action on one job goes to the shard its id maps to.
 */
@Injectable()
export class TopicInspector {
  constructor(
    private readonly connection: RedisConnection,
    private readonly keySpace: RedisKeySpace,
    private readonly shards: TopicShards,
    private readonly orchestrator: DelayQueueOrchestrator,
    private readonly repeats: RepeatScheduler,
    private readonly writer: JobWriter,
  ) {}

  /** The job with this id and where it is, or null if there is none (never scheduled, done, or cancelled). */
  async job<T = unknown>(topic: string, id: string): Promise<DelayedJob<T> | null> {
    assertValidTopic(topic);
    // A job of a group lives on its group's shard: on a sharded topic, look in the others too.
    type JobRead = [number, string | null, string | null, string | null, string | null, string | null, string | null];
    let read: JobRead | undefined;
    for (const shard of this.shards.searchOrder(topic, id)) {
      const found: JobRead = await readJobScript.run<JobRead>(this.connection.client, completedReadScriptKeys(shard), [id]);
      read = found;
      if (found[1] !== null) break;
    }
    const [nowMs, body, dueScore, deadline, diedAt, finishedAt, result] = read!;
    if (body === null) return null;
    const job = decodeJobLeniently<T>(body);
    const { payload, attempts, maxAttempts, lastError, lastErrorStack, progress } = job;
    const base = { id, topic, payload, attempts, maxAttempts, createdAt: new Date(job.createdAt), lastError, lastErrorStack, progress, group: job.group };
    if (dueScore !== null) {
      const dueMs = Math.floor(Number(dueScore) / DUE_SCORE_SLOTS);
      return { ...base, state: dueMs <= Number(nowMs) ? 'due' : 'scheduled', scheduledAt: new Date(dueMs) };
    }
    if (deadline !== null) return { ...base, state: 'active', visibleUntil: new Date(Number(deadline)) };
    if (diedAt !== null) return { ...base, state: 'dead', diedAt: new Date(Number(diedAt)) };
    if (finishedAt !== null) {
      const kept = { ...base, state: 'completed' as const, finishedAt: new Date(Number(finishedAt)) };
      return result === null ? kept : { ...kept, result: JSON.parse(result) as unknown };
    }
    return null;
  }

  /** Counts of a topic's jobs by state and of its schedules, one snapshot per shard, added up. */
  async stats(topic: string): Promise<DelayQueueStats> {
    assertValidTopic(topic);
    const perShard = await Promise.all(
      this.shards.all(topic).map((keys) => topicStatsScript.run<number[]>(this.connection.client, topicStatsScriptKeys(keys), [])),
    );
    const total = { scheduled: 0, due: 0, active: 0, dead: 0, schedules: 0, paused: false, grouped: 0, busyGroups: 0 };
    let completed = 0;
    for (const [waiting, due, active, dead, schedules, kept, paused, grouped, busyGroups] of perShard) {
      total.scheduled += waiting - due;
      total.due += due;
      total.active += active;
      total.dead += dead;
      total.schedules += schedules;
      completed += kept;
      total.paused ||= paused === 1;
      total.grouped += grouped;
      total.busyGroups += busyGroups;
    }
    // Only topics that keep completed jobs show the count (most keep none).
    return completed > 0 ? { ...total, completed } : total;
  }

  /** How many dead letters one shard holds now. */
  async deadCount(shard: TopicKeys): Promise<number> {
    return Number((await topicStatsScript.run<number[]>(this.connection.client, topicScriptKeys(shard), []))[3]);
  }

  /** The newest `limit` dead letters of `topic`, newest first. */
  async deadLetters<T = unknown>(topic: string, limit: number): Promise<Array<DelayedJob<T>>> {
    assertValidTopic(topic);
    // Each shard's newest `limit`, merged: the newest `limit` overall are among them.
    const perShard = await Promise.all(
      this.shards.all(topic).map((keys) => readDeadLettersScript.run<(string | number)[]>(this.connection.client, topicScriptKeys(keys), [limit])),
    );
    const result: Array<DelayedJob<T> & { diedAt: Date }> = [];
    for (const flat of perShard) for (let i = 0; i < flat.length; i += 3) {
      const { payload, attempts, maxAttempts, createdAt, lastError, lastErrorStack, progress } = decodeJobLeniently<T>(String(flat[i + 1]));
      const diedAt = new Date(Number(flat[i + 2]));
      const job = { id: String(flat[i]), topic, payload, state: 'dead' as const, attempts, maxAttempts, createdAt: new Date(createdAt), diedAt, lastError, lastErrorStack };
      result.push(progress === undefined ? job : { ...job, progress });
    }
    if (perShard.length === 1) return result;
    return result.sort((x, y) => y.diedAt.getTime() - x.diedAt.getTime()).slice(0, limit);
  }

  /** The repeatable schedules of `topic` with the tick each has queued (`nextRunAt`), soonest first. */
  schedules(topic: string): Promise<RepeatInfo[]> {
    assertValidTopic(topic);
    return this.repeats.list(topic);
  }

  /** Topics consumed by an `@OnDelayed` handler of this application (the ones the delay queue runs). */
  handledTopics(): readonly string[] {
    return this.orchestrator.handledTopics();
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
    const { keys, truncated } = await scanKeys(this.connection.client, this.keySpace.topicJobsPattern(), limit);
    const topics = new Set<string>();
    for (const key of keys) {
      const found = this.keySpace.topicOfJobsKey(key);
      if (found !== undefined && isValidTopic(found)) topics.add(this.topicOfShard(found));
    }
    return { topics: [...topics], truncated };
  }

  /** The first `limit` jobs of `topic` in `state`, each payload shortened to `previewLength` characters. */
  async listJobs(topic: string, state: ListedJobState, limit: number, previewLength: number): Promise<ListedJobs> {
    assertValidTopic(topic);
    // A UTF-16 code unit takes at most 3 bytes of UTF-8: this many bytes always hold a whole preview.
    const previewBytes = 3 * previewLength + 48;
    const perShard = await Promise.all(
      this.shards.all(topic).map((keys) =>
        listJobsScript.run<Array<string | number | null>>(this.connection.client, completedReadScriptKeys(keys), [state, limit, previewBytes]),
      ),
    );
    let now = 0;
    let total = 0;
    let jobs: ListedJob[] = [];
    for (const flat of perShard) {
      now = Math.max(now, Number(flat[0]));
      total += Number(flat[1]);
      for (let i = 2; i < flat.length; i += 5) {
        const header = flat[i + 2];
        jobs.push(
          toListedJob(
            { id: String(flat[i]), state, score: String(flat[i + 1]), header: header === null ? null : String(header) },
            String(flat[i + 3]),
            Number(flat[i + 4]),
            previewLength,
          ),
        );
      }
    }
    if (perShard.length > 1) jobs = jobs.sort(LIST_ORDER[state]).slice(0, limit);
    return { topic, state, now, total, jobs };
  }

  /** Deletes one dead letter; false when the job is not dead (retried or deleted meanwhile). */
  async deleteDead(topic: string, id: string): Promise<boolean> {
    for (const keys of this.shardsOfJob(topic, id)) {
      if ((await this.writer.runRecorded<number>(deleteDeadJobScript, keys, [id])) === 1) return true;
    }
    return false;
  }

  /** Cancels a job that is still waiting; a running job is left alone. */
  async cancelWaiting(topic: string, id: string): Promise<CancelWaitingOutcome> {
    for (const keys of this.shardsOfJob(topic, id)) {
      const result = await this.writer.runRecorded<number>(cancelWaitingJobScript, keys, [id]);
      if (result !== 0) return result === 1 ? 'cancelled' : 'running';
    }
    return 'not-waiting';
  }

  /**
   * The shards that may hold job `id` of `topic`, its own first (a job of a group lives on its
   * group's shard), after checking both names.
   */
  private shardsOfJob(topic: string, id: string): TopicKeys[] {
    assertJobAddress(topic, id);
    return this.shards.searchOrder(topic, id);
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

/**
 * Checks a topic and job id that came from outside (a URL, a form) before any Redis call.
 *
 * @throws InvalidTopicError, InvalidJobError
 */
export function assertJobAddress(topic: string, id: string): void {
  assertValidTopic(topic);
  if (typeof id !== 'string' || id.length === 0 || Buffer.byteLength(id) > 1024) {
    throw new InvalidJobError(topic, 'id', 'must be the non-empty id of a job (at most 1024 bytes)');
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

/** The order `listJobsScript` returns each state in, to merge the shards of a sharded topic the same way. */
const LIST_ORDER: Record<ListedJobState, (a: ListedJob, b: ListedJob) => number> = {
  due: (a, b) => a.dueAt! - b.dueAt!,
  scheduled: (a, b) => a.dueAt! - b.dueAt!,
  active: (a, b) => a.visibleUntil! - b.visibleUntil!,
  dead: (a, b) => b.diedAt! - a.diedAt!,
  completed: (a, b) => b.finishedAt! - a.finishedAt!,
};

/**
 * A listed job from what `listJobsScript` returns for it: the body's header (null when this library
 * did not write the body), the first bytes of the payload (of the raw body when unreadable) and the
 * payload's whole size in bytes.
 */
function toListedJob(
  row: { id: string; state: ListedJobState; score: string; header: string | null },
  head: string,
  bytes: number,
  previewLength: number,
): ListedJob {
  let job: { attempts: number; maxAttempts?: number; createdAt: number; lastError?: string; progress?: unknown };
  try {
    if (row.header === null) throw new Error(`Unreadable job body (written by hand or by an incompatible version): ${head.slice(0, 120)}`);
    job = decodeHeader(row.header);
  } catch (error) {
    job = { attempts: 0, createdAt: 0, lastError: errorMessage(error) };
  }
  const times =
    row.state === 'due' || row.state === 'scheduled'
      ? { dueAt: Math.floor(Number(row.score) / DUE_SCORE_SLOTS) }
      : row.state === 'active'
        ? { visibleUntil: Number(row.score) }
        : row.state === 'dead'
          ? { diedAt: Number(row.score) }
          : { finishedAt: Number(row.score) };
  return {
    id: row.id,
    state: row.state,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    createdAt: job.createdAt,
    ...times,
    lastError: job.lastError,
    ...(job.progress === undefined ? {} : { progress: job.progress }),
    payloadPreview: previewOf(head, bytes, previewLength),
    payloadLength: bytes,
  };
}

/**
 * The first `length` characters of the payload and '…' when there is more. `head` holds at least
 * that many whole characters whenever the payload is longer (see `listJobs`), so a character cut by
 * the byte limit never shows.
 */
function previewOf(head: string, bytes: number, length: number): string {
  const whole = Buffer.byteLength(head) === bytes;
  if (whole && head.length <= length) return head;
  let preview = head.slice(0, length);
  if (/[\uD800-\uDBFF]$/.test(preview)) preview = preview.slice(0, -1); // half of a surrogate pair
  return `${preview}…`;
}
