import { Injectable } from '@nestjs/common';
import type { TopicKeys } from '../core/keys/redis-key-space.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { assertJobAddress } from './job-address.js';
import { cancelScriptKeys } from './jobs/script-keys.js';
import { TopicShards } from './jobs/topic-shards.js';
import { JobWriter } from './writer/job-writer.js';
import { cancelJobScript } from './scripts/cancel-job.lua.js';
import { cancelWaitingJobScript } from './scripts/cancel-waiting-job.lua.js';
import { deleteDeadJobScript } from './scripts/delete-dead-job.lua.js';
import { pauseTopicScript } from './scripts/pause-topic.lua.js';
import { rescheduleJobScript } from './scripts/reschedule-job.lua.js';
import { retryDeadJobsScript } from './scripts/retry-dead-jobs.lua.js';
import { topicStatsScript } from './scripts/topic-stats.lua.js';

/** Dead letters requeued per script call by `retryDead(topic)`. */
const RETRY_DEAD_BATCH = 1000;

/** What `cancelWaiting` found. */
export type CancelWaitingOutcome = 'cancelled' | 'running' | 'not-waiting';

/**
 * The commands about jobs already stored and about a topic as a whole: those `DelayQueueService`
 * sends (cancel, reschedule, requeue dead letters, pause and resume; arguments checked by the
 * service), and the two careful actions an operator needs from add-ons such as the dashboard
 * (deleting only a dead letter, cancelling only a waiting job; they check their own arguments).
 * Each command runs with an operation record (a re-sent command answers as its first run). A job
 * is looked for on its own shard, then (sharded topics only) on the others: a job of a group lives
 * on its group's shard.
 */
@Injectable()
export class JobCommands {
  constructor(
    private readonly writer: JobWriter,
    private readonly shards: TopicShards,
    private readonly connection: RedisConnection,
  ) {}

  async cancel(topic: string, id: string): Promise<boolean> {
    const args = [id, this.writer.publishCommand];
    return this.untilFound(topic, id, async (keys) => (await this.writer.runRecorded<number>(cancelJobScript, keys, args, cancelScriptKeys)) === 1);
  }

  async reschedule(topic: string, id: string, kind: 'd' | 'a', when: number): Promise<boolean> {
    return this.untilFound(topic, id, async (keys) => (await this.writer.runRecorded<number>(rescheduleJobScript, keys, [id, kind, when])) === 1);
  }

  async retryDead(topic: string, id?: string): Promise<number> {
    if (id !== undefined) {
      const moved = await this.untilFound(topic, id, async (keys) => (await this.writer.runRecorded<number>(retryDeadJobsScript, keys, [id, 1])) === 1);
      return moved ? 1 : 0;
    }
    const counts = await Promise.all(this.shards.all(topic).map((keys) => this.retryAllDead(keys)));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** Sets or clears every shard's pause flag; resolves whether any shard changed. */
  async setPaused(topic: string, paused: boolean): Promise<boolean> {
    const changed = await Promise.all(
      this.shards.all(topic).map((keys) => this.writer.runRecorded<number>(pauseTopicScript, keys, [paused ? '1' : '0'])),
    );
    return changed.some((n) => n === 1);
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

  /** Requeues every dead letter of one shard. */
  private async retryAllDead(keys: TopicKeys): Promise<number> {
    // Bounded by what is dead now, so jobs that die again meanwhile are not chased forever.
    let remaining = await this.deadCount(keys);
    let total = 0;
    while (remaining > 0) {
      const moved = await this.writer.runRecorded<number>(retryDeadJobsScript, keys, ['', Math.min(remaining, RETRY_DEAD_BATCH)]);
      total += moved;
      if (moved === 0) break;
      remaining -= moved;
    }
    return total;
  }

  /** How many dead letters one shard holds now. */
  private async deadCount(shard: TopicKeys): Promise<number> {
    return (await topicStatsScript.call(this.connection.client, shard, {})).dead;
  }

  /**
   * The shards that may hold job `id` of `topic`, its own first (a job of a group lives on its
   * group's shard), after checking both names.
   */
  private shardsOfJob(topic: string, id: string): TopicKeys[] {
    assertJobAddress(topic, id);
    return this.shards.searchOrder(topic, id);
  }

  /** `command` on the job's shards in search order, until one finds the job (true). */
  private async untilFound(topic: string, id: string, command: (keys: TopicKeys) => Promise<boolean>): Promise<boolean> {
    for (const keys of this.shards.searchOrder(topic, id)) if (await command(keys)) return true;
    return false;
  }
}
