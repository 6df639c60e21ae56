import { Injectable } from '@nestjs/common';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { DUE_SCORE_SLOTS } from './jobs/delay-queue.constants.js';
import type { DelayedJob, DelayQueueStats } from './interfaces/delayed-job.interface.js';
import { decodeJobLeniently } from './jobs/job-codec.js';
import { LIST_ORDER, toListedJob, type ListedJob, type ListedJobs, type ListedJobState } from './listed-job.js';
import { listJobsScript } from './scripts/list-jobs.lua.js';
import { readDeadLettersScript } from './scripts/read-dead-letters.lua.js';
import { readJobScript, type JobRead } from './scripts/read-job.lua.js';
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
  async job<T = unknown>(topic: string, id: string): Promise<DelayedJob<T> | null> {
    assertValidTopic(topic);
    // A job of a group lives on its group's shard: on a sharded topic, look in the others too.
    let read: JobRead | undefined;
    for (const shard of this.shards.searchOrder(topic, id)) {
      read = await readJobScript.call(this.connection, shard, { id });
      if (read.body !== null) break;
    }
    const { nowMs, body, dueScore, visibleUntilMs, diedAtMs, finishedAtMs, resultJson } = read!;
    if (body === null) return null;
    const job = decodeJobLeniently<T>(body);
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
    };
    if (dueScore !== null) {
      const dueMs = Math.floor(Number(dueScore) / DUE_SCORE_SLOTS);
      return { ...base, state: dueMs <= nowMs ? 'due' : 'scheduled', scheduledAt: new Date(dueMs) };
    }
    if (visibleUntilMs !== null) return { ...base, state: 'active', visibleUntil: new Date(visibleUntilMs) };
    if (diedAtMs !== null) return { ...base, state: 'dead', diedAt: new Date(diedAtMs) };
    if (finishedAtMs !== null) {
      const kept = { ...base, state: 'completed' as const, finishedAt: new Date(finishedAtMs) };
      return resultJson === null ? kept : { ...kept, result: JSON.parse(resultJson) as unknown };
    }
    return null;
  }

  /** Counts of a topic's jobs by state and of its schedules, one snapshot per shard, added up. */
  async stats(topic: string): Promise<DelayQueueStats> {
    assertValidTopic(topic);
    const perShard = await Promise.all(this.shards.all(topic).map((keys) => topicStatsScript.call(this.connection, keys, {})));
    const total = { scheduled: 0, due: 0, active: 0, dead: 0, schedules: 0, paused: false, grouped: 0, busyGroups: 0 };
    let completed = 0;
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
    }
    // Only topics that keep completed jobs show the count (most keep none).
    return completed > 0 ? { ...total, completed } : total;
  }

  /** The newest `limit` dead letters of `topic`, newest first. */
  async deadLetters<T = unknown>(topic: string, limit: number): Promise<Array<DelayedJob<T>>> {
    assertValidTopic(topic);
    // Each shard's newest `limit`, merged: the newest `limit` overall are among them.
    const perShard = await Promise.all(this.shards.all(topic).map((keys) => readDeadLettersScript.call(this.connection, keys, { limit })));
    const result: Array<DelayedJob<T> & { diedAt: Date }> = [];
    for (const letters of perShard)
      for (const { id, body, diedAtMs } of letters) {
        const { payload, attempts, maxAttempts, createdAt, lastError, lastErrorStack, progress } = decodeJobLeniently<T>(body);
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
      this.shards.all(topic).map((keys) => listJobsScript.call(this.connection, keys, { state, limit, previewBytes })),
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
}
