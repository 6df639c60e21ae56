import { Injectable } from '@nestjs/common';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { DUE_SCORE_SLOTS } from './jobs/delay-queue.constants.js';
import type { DelayedJob, DelayedJobState, DelayQueueStats } from './interfaces/delayed-job.interface.js';
import type { ShardListPosition } from './job-list-cursor.js';
import { decodeJobLeniently } from './jobs/job-codec.js';
import { LIST_ORDER, toListedJob, type ListedJob, type ListedJobs, type ListedJobState } from './listed-job.js';
import { listJobsScript, type ListedRow, type ListPosition } from './scripts/list-jobs.lua.js';
import { readDeadLettersScript } from './scripts/read-dead-letters.lua.js';
import { readJobScript } from './scripts/read-job.lua.js';
import type { JobRead } from './scripts/read-job-lua-snippet.js';
import { topicStatsScript } from './scripts/topic-stats.lua.js';
import { assertValidTopic } from '../core/keys/topic-name.js';
import { TopicShards } from './jobs/topic-shards.js';
import type { RepeatInfo } from './interfaces/repeat-options.interface.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';

/**
 * The read side of the delay queue: what one topic holds. One job, a topic's counts, dead letters
 * and repeatable schedules (what `DelayQueueService` answers with), and for add-ons such as the
 * dashboard the jobs of a topic by state with payload previews. It writes nothing (the operator's
 * actions are `JobCommands`'); which topics exist is `TopicDirectory`'s. A sharded topic is one
 * topic here: reads merge its shards.
 */
@Injectable()
export class TopicInspector {
  constructor(
    private readonly connection: RedisConnection,
    private readonly shards: TopicShards,
    private readonly repeats: RepeatScheduler,
  ) {}

  /** A job's log lines, oldest first; empty when it has none (see JobContext.log). A job of a group may live on another shard. */
  async logs(topic: string, id: string): Promise<string[]> {
    assertValidTopic(topic);
    for (const shard of this.shards.searchOrder(topic, id)) {
      const lines = await this.connection.command<string[]>('lrange', `${shard.logsPrefix}${id}`, 0, -1);
      if (lines.length > 0) return lines;
    }
    return [];
  }

  /** The job with this id and where it is, or null if there is none (never scheduled, done, or cancelled). */
  async job<T = unknown, R = unknown>(topic: string, id: string): Promise<DelayedJob<T, R> | null> {
    return (await this.jobRecord<T, R>(topic, id))?.job ?? null;
  }

  /**
   * `job()`, and what its stored header holds that `DelayedJob` leaves out (the dedupe it was
   * scheduled with, as stored: dedupe-spec.ts), for add-ons such as the dashboard.
   */
  async jobRecord<T = unknown, R = unknown>(topic: string, id: string): Promise<JobRecord<T, R> | null> {
    assertValidTopic(topic);
    // A job of a group lives on its group's shard: on a sharded topic, look in the others too.
    let read: JobRead | undefined;
    for (const shard of this.shards.searchOrder(topic, id)) {
      read = await readJobScript.call(this.connection, shard, { id });
      if (read.body !== null) break;
    }
    const { nowMs, body, dueScore, inGroupQueue, visibleUntilMs, diedAtMs, finishedAtMs, resultJson } = read!;
    if (body === null) return null;
    const job = decodeJobLeniently<T>(body);
    const found = (delayed: DelayedJob<T, R>): JobRecord<T, R> =>
      job.dedupe === undefined ? { job: delayed } : { job: delayed, dedupe: job.dedupe };
    const { payload, attempts, maxAttempts, lastError, lastErrorStack, progress } = job;
    const base = {
      id,
      topic,
      payload,
      attempts,
      maxAttempts,
      createdAt: new Date(job.createdAt),
      lastError,
      lastErrorStack,
      progress,
      group: job.group,
      priority: job.priority ?? 0,
    };
    if (dueScore !== null) {
      const dueMs = Math.floor(Number(dueScore) / DUE_SCORE_SLOTS);
      const state = inGroupQueue ? 'waiting-group' : dueMs <= nowMs ? 'due' : 'scheduled';
      return found({ ...base, state, scheduledAt: new Date(dueMs) });
    }
    if (visibleUntilMs !== null) return found({ ...base, state: 'active', visibleUntil: new Date(visibleUntilMs) });
    if (diedAtMs !== null) return found({ ...base, state: 'dead', diedAt: new Date(diedAtMs) });
    if (finishedAtMs !== null) {
      const kept = { ...base, state: 'completed' as const, finishedAt: new Date(finishedAtMs) };
      return found(resultJson === null ? kept : { ...kept, result: JSON.parse(resultJson) as R });
    }
    return null;
  }

  /** Counts of a topic's jobs by state and of its schedules, one snapshot per shard, added up. */
  async stats(topic: string): Promise<DelayQueueStats> {
    return (await this.topicState(topic)).stats;
  }

  /**
   * `stats()`, and the end of the topic's block (a handler's `JobRateLimitedError`) in server ms when
   * one is in place: the latest of its shards' (a block reaches the other shards of a sharded topic
   * just after its own), read in the same snapshot as each shard's counts.
   */
  async topicState(topic: string): Promise<TopicState> {
    assertValidTopic(topic);
    const perShard = await Promise.all(this.shards.all(topic).map((keys) => topicStatsScript.call(this.connection, keys, {})));
    const total = { scheduled: 0, due: 0, active: 0, dead: 0, schedules: 0, paused: false, grouped: 0, busyGroups: 0, readyGroups: 0 };
    let completed = 0;
    let blockedUntil = -1;
    for (const shard of perShard) {
      total.scheduled += shard.waiting - shard.due;
      total.due += shard.due;
      total.active += shard.active;
      total.dead += shard.dead;
      total.schedules += shard.schedules;
      completed += shard.completed;
      total.paused ||= shard.paused;
      total.grouped += shard.grouped;
      total.busyGroups += shard.busyGroups;
      total.readyGroups += shard.readyGroups;
      blockedUntil = Math.max(blockedUntil, shard.blockedUntilMs);
    }
    // Only topics that keep completed jobs show the count (most keep none).
    const stats = completed > 0 ? { ...total, completed } : total;
    return blockedUntil < 0 ? { stats } : { stats, blockedUntil };
  }

  /** The newest `limit` dead letters of `topic`, newest first. */
  async deadLetters<T = unknown>(topic: string, limit: number): Promise<Array<DelayedJob<T>>> {
    assertValidTopic(topic);
    // Each shard's newest `limit`, merged: the newest `limit` overall are among them.
    const perShard = await Promise.all(this.shards.all(topic).map((keys) => readDeadLettersScript.call(this.connection, keys, { limit })));
    const result: Array<DelayedJob<T> & { diedAt: Date }> = [];
    for (const letters of perShard)
      for (const { id, body, diedAtMs } of letters) {
        const { payload, attempts, maxAttempts, createdAt, lastError, lastErrorStack, progress, priority } = decodeJobLeniently<T>(body);
        const diedAt = new Date(diedAtMs);
        const job = {
          id,
          topic,
          payload,
          state: 'dead' as const,
          attempts,
          maxAttempts,
          createdAt: new Date(createdAt),
          diedAt,
          lastError,
          lastErrorStack,
          priority: priority ?? 0,
        };
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

  /** The first `limit` jobs of `topic` in `state`, each payload shortened to `previewLength` characters. */
  async listJobs(topic: string, state: ListedJobState, limit: number, previewLength: number): Promise<ListedJobs> {
    assertValidTopic(topic);
    // A UTF-16 code unit takes at most 3 bytes of UTF-8: this many bytes always hold a whole preview.
    const previewBytes = 3 * previewLength + 48;
    const perShard = await Promise.all(
      this.shards.all(topic).map((keys) => listJobsScript.call(this.connection, keys, { ...FIRST_PAGE, state, limit, previewBytes })),
    );
    let now = 0;
    let total = 0;
    let jobs: ListedJob[] = [];
    for (const shard of perShard) {
      now = Math.max(now, shard.nowMs);
      total += shard.total;
      for (const row of shard.rows) jobs.push(toListedJob(row, state, previewLength));
    }
    if (perShard.length > 1) jobs = jobs.sort(LIST_ORDER[state]).slice(0, limit);
    return { topic, state, now, total, jobs };
  }

  /**
   * One page of `topic`'s jobs in `state`, whole, after the places of `from` (one per shard), and
   * each shard's place after this page. The shards' pages are merged in the state's order and cut
   * at `limit`; a shard's place moves only past the jobs of it this page returned.
   */
  async page<T = unknown>(topic: string, state: DelayedJobState, limit: number, from: readonly ShardListPosition[]): Promise<JobPage<T>> {
    const shards = this.shards.all(topic);
    const replies = await Promise.all(
      shards.map((keys, i) => {
        const place = from[i];
        if (place === 'done') return null;
        const after = place === null ? { afterScore: '', afterId: '' } : { afterScore: place.score, afterId: place.id };
        return listJobsScript.call(this.connection, keys, { ...after, state, limit, previewBytes: 0, whole: true });
      }),
    );
    const found: Array<{ shard: number; row: ListedRow }> = [];
    replies.forEach((reply, shard) => reply?.rows.forEach((row) => found.push({ shard, row })));
    const descending = state === 'dead' || state === 'completed';
    if (shards.length > 1) found.sort((a, b) => comparePlaces(a.row, b.row) * (descending ? -1 : 1));
    const taken = found.slice(0, limit);
    const places = replies.map((reply, shard): ShardListPosition => {
      if (reply === null) return 'done';
      const mine = taken.filter((entry) => entry.shard === shard);
      if (mine.length === reply.rows.length) return reply.more ? (reply.last ?? from[shard]) : 'done';
      const last = mine.at(-1)?.row;
      return last ? { score: last.score, id: last.id } : from[shard];
    });
    return { jobs: taken.map(({ row }) => toDelayedJob<T>(topic, state, row)), places };
  }
}

/** A job and the stored header fields `DelayedJob` leaves out, as `TopicInspector.jobRecord` reads them. */
export interface JobRecord<T = unknown, R = unknown> {
  readonly job: DelayedJob<T, R>;
  /** The dedupe it was scheduled with, as stored (dedupe-spec.ts: `decodeDedupe`); absent when it had none. */
  readonly dedupe?: string;
}

/** A topic's counts and its block, as `TopicInspector.topicState` reads them. */
export interface TopicState {
  readonly stats: DelayQueueStats;
  /** When the topic's claims resume after a `JobRateLimitedError` (server ms); absent when they are not blocked. */
  readonly blockedUntil?: number;
}

/** The list script's arguments of a first page: from the start of the state, previews only. */
const FIRST_PAGE = { whole: false, afterScore: '', afterId: '' };

/** A page of whole jobs and each shard's place after it (see `TopicInspector.page`). */
export interface JobPage<T> {
  readonly jobs: Array<DelayedJob<T>>;
  readonly places: ShardListPosition[];
}

/** The order of two places in a state's zset: score, then id as bytes (Redis's order). */
function comparePlaces(a: ListPosition, b: ListPosition): number {
  const byScore = Number(a.score) - Number(b.score);
  return byScore !== 0 ? Math.sign(byScore) : Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
}

/** A whole job as listed in `state` (its score is the state's time). */
function toDelayedJob<T>(topic: string, state: DelayedJobState, row: ListedRow): DelayedJob<T> {
  const job = decodeJobLeniently<T>(row.payloadHead);
  const { payload, attempts, maxAttempts, lastError, lastErrorStack, progress, group, priority } = job;
  const createdAt = new Date(job.createdAt);
  const base = { id: row.id, topic, payload, state, attempts, maxAttempts, createdAt, lastError, lastErrorStack, priority: priority ?? 0 };
  const extra = { ...(progress === undefined ? {} : { progress }), ...(group === undefined ? {} : { group }) };
  const at = Number(row.score);
  switch (state) {
    case 'due':
    case 'scheduled':
    case 'waiting-group':
      return { ...base, ...extra, scheduledAt: new Date(Math.floor(at / DUE_SCORE_SLOTS)) };
    case 'active':
      return { ...base, ...extra, visibleUntil: new Date(at) };
    case 'dead':
      return { ...base, ...extra, diedAt: new Date(at) };
    case 'completed': {
      const kept = { ...base, ...extra, finishedAt: new Date(at) };
      return row.resultJson === null ? kept : { ...kept, result: JSON.parse(row.resultJson) as unknown };
    }
  }
}
