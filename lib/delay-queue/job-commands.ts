import { Injectable } from '@nestjs/common';
import type { TopicKeys } from '../core/keys/redis-key-space.js';
import { cancelScriptKeys } from './jobs/script-keys.js';
import { TopicShards } from './jobs/topic-shards.js';
import { TopicInspector } from './topic-inspector.js';
import { JobWriter } from './writer/job-writer.js';
import { cancelJobScript } from './scripts/cancel-job.lua.js';
import { pauseTopicScript } from './scripts/pause-topic.lua.js';
import { rescheduleJobScript } from './scripts/reschedule-job.lua.js';
import { retryDeadJobsScript } from './scripts/retry-dead-jobs.lua.js';

/** Dead letters requeued per script call by `retryDead(topic)`. */
const RETRY_DEAD_BATCH = 1000;

/**
 * The commands `DelayQueueService` sends about jobs already stored and about a topic as a whole:
 * cancel, reschedule, requeue dead letters, pause and resume. Arguments are checked by the service;
 * each command runs with an operation record (a re-sent command answers as its first run). A job
 * is looked for on its own shard, then (sharded topics only) on the others: a job of a group lives
 * on its group's shard.
 */
@Injectable()
export class JobCommands {
  constructor(
    private readonly writer: JobWriter,
    private readonly shards: TopicShards,
    private readonly reader: TopicInspector,
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

  /** Requeues every dead letter of one shard. */
  private async retryAllDead(keys: TopicKeys): Promise<number> {
    // Bounded by what is dead now, so jobs that die again meanwhile are not chased forever.
    let remaining = await this.reader.deadCount(keys);
    let total = 0;
    while (remaining > 0) {
      const moved = await this.writer.runRecorded<number>(retryDeadJobsScript, keys, ['', Math.min(remaining, RETRY_DEAD_BATCH)]);
      total += moved;
      if (moved === 0) break;
      remaining -= moved;
    }
    return total;
  }

  /** `command` on the job's shards in search order, until one finds the job (true). */
  private async untilFound(topic: string, id: string, command: (keys: TopicKeys) => Promise<boolean>): Promise<boolean> {
    for (const keys of this.shards.searchOrder(topic, id)) if (await command(keys)) return true;
    return false;
  }
}
