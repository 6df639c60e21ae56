import { Injectable } from '@nestjs/common';
import { RedisKeySpace, type TopicKeys } from '../core/keys/redis-key-space.js';
import { TopicHasRunningJobsError } from '../core/errors/topic-has-running-jobs.error.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { assertJobAddress } from './job-address.js';
import { TopicShards } from './jobs/topic-shards.js';
import { JobWriter } from './writer/job-writer.js';
import { cancelJobScript } from './scripts/cancel-job.lua.js';
import { cancelWaitingJobScript, type CancelWaitingOutcome } from './scripts/cancel-waiting-job.lua.js';
import { deleteDeadJobScript } from './scripts/delete-dead-job.lua.js';
import { pauseTopicScript } from './scripts/pause-topic.lua.js';
import { rescheduleJobScript } from './scripts/reschedule-job.lua.js';
import { retryDeadJobsScript } from './scripts/retry-dead-jobs.lua.js';
import { updatePayloadScript } from './scripts/update-payload.lua.js';
import { drainWaitingJobsScript } from './scripts/drain-waiting-jobs.lua.js';
import { cleanFinishedJobsScript } from './scripts/clean-finished-jobs.lua.js';
import { topicStatsScript } from './scripts/topic-stats.lua.js';

/** Dead letters requeued per script call by `retryDead(topic)`. */
const RETRY_DEAD_BATCH = 1000;

/**
 * Jobs removed per script call by `drain` and `clean`: a call over 1,000 jobs keeps Redis busy for
 * milliseconds, never seconds, whatever the topic's size.
 */
const REMOVAL_BATCH = 1000;

/** Keys SCAN may gather before `obliterate` unlinks them and scans again. */
const OBLITERATE_SCAN_KEYS = 10_000;
/** How long the pause of an obliterate that failed half-way is retried to be cleared (ms). */
const RESUME_RETRY_MS = 60_000;

/** The shard's held group turns (see group-lua-snippet.ts: named from the shard's prefix there). */
function groupsHeldKey(keys: TopicKeys): string {
  return `${keys.jobs.slice(0, -':jobs'.length)}:groups-held`;
}

export type { CancelWaitingOutcome } from './scripts/cancel-waiting-job.lua.js';

/**
 * The commands about jobs already stored and about a topic as a whole: those `DelayQueueService`
 * sends (cancel, reschedule, requeue dead letters, pause and resume; arguments checked by the
 * service; also update a waiting job's payload), and the two careful actions an operator needs from add-ons such as the dashboard
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
    private readonly keySpace: RedisKeySpace,
    private readonly repeats: RepeatScheduler,
  ) {}

  async cancel(topic: string, id: string): Promise<boolean> {
    const args = { id, publishCommand: this.writer.publishCommand };
    return this.untilFound(topic, id, async (keys) => (await this.writer.runRecorded(cancelJobScript, keys, args)).existed);
  }

  async reschedule(topic: string, id: string, kind: 'd' | 'a', when: number): Promise<boolean> {
    const args = { id, kind, when };
    return this.untilFound(topic, id, async (keys) => (await this.writer.runRecorded(rescheduleJobScript, keys, args)).rescheduled);
  }

  /** Replaces a job's payload (JSON, checked by the service) when it is not running; see update-payload.lua.ts. */
  async updatePayload(topic: string, id: string, payloadJson: string): Promise<boolean> {
    const args = { id, payload: payloadJson };
    return this.untilFound(topic, id, async (keys) => (await this.writer.runRecorded(updatePayloadScript, keys, args)).updated);
  }

  async retryDead(topic: string, id?: string): Promise<number> {
    if (id !== undefined) {
      const args = { id, limit: 1 };
      const retried = (keys: TopicKeys) => this.writer.runRecorded(retryDeadJobsScript, keys, args);
      const moved = await this.untilFound(topic, id, async (keys) => (await retried(keys)).requeued === 1);
      return moved ? 1 : 0;
    }
    const counts = await Promise.all(this.shards.all(topic).map((keys) => this.retryAllDead(keys)));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /**
   * Removes every waiting job (due, scheduled, waiting for a retry or for its group's turn) shard by
   * shard, in batches; running jobs stay. Bounded by what waited when it started, so jobs scheduled
   * meanwhile are not chased for ever (they may be removed too). Resolves how many it removed.
   */
  async drain(topic: string): Promise<number> {
    let total = 0;
    for (const keys of this.shards.all(topic)) {
      const stats = await topicStatsScript.call(this.connection, keys, {});
      let remaining = stats.waiting + stats.grouped;
      // One call at least, also when nothing waits: it marks the claims made so far, so that jobs
      // claimed ahead of a free slot are removed when they are handed back (drop-job-lua-snippet.ts).
      do {
        const batch = Math.max(1, Math.min(remaining, REMOVAL_BATCH));
        const { removed } = await this.writer.runRecorded(drainWaitingJobsScript, keys, { batch });
        total += removed;
        if (removed < batch) break;
        remaining -= removed;
      } while (remaining > 0);
    }
    return total;
  }

  /**
   * Removes dead letters or kept completed jobs that reached that state more than `olderThanMs` ago,
   * oldest first, at most `limit` (shard by shard), in batches. Bounded by what the state held when
   * it started. Resolves how many it removed.
   */
  async clean(topic: string, state: 'dead' | 'completed', olderThanMs: number, limit: number): Promise<number> {
    let total = 0;
    for (const keys of this.shards.all(topic)) {
      const stats = await topicStatsScript.call(this.connection, keys, {});
      let remaining = Math.min(limit - total, state === 'dead' ? stats.dead : stats.completed);
      while (remaining > 0) {
        const batch = Math.min(remaining, REMOVAL_BATCH);
        const { removed } = await this.writer.runRecorded(cleanFinishedJobsScript, keys, { state, olderThanMs, batch });
        total += removed;
        if (removed < batch) break;
        remaining -= removed;
      }
      if (total >= limit) break;
    }
    return total;
  }

  /**
   * Removes every key of the topic (see `DelayQueueService.obliterate`): pauses it (no claim starts
   * once every shard's flag is set), refuses unless `force` when a job runs or a cancelled job's
   * handler holds its group's turn (resuming the topic if it paused it), drains its waiting jobs
   * (their waiters hear of it), removes its repeatable schedules through their removal script
   * (recorded, so no instance restores them), then UNLINKs every key of each shard's family, found by
   * SCAN, in batches. The removal records of the schedules are kept (a day): without them an instance
   * that upserted a schedule would store it again.
   */
  async obliterate(topic: string, force: boolean): Promise<{ keys: number; jobs: number; schedules: number }> {
    const shards = this.shards.all(topic);
    const wasPaused = (await Promise.all(shards.map((keys) => topicStatsScript.call(this.connection, keys, {})))).some((s) => s.paused);
    try {
      return await this.obliteratePaused(topic, shards, force, wasPaused);
    } catch (error) {
      // A refusal resumed the topic already; a failure half-way (Redis unreachable) leaves it to the
      // background: the topic runs again once Redis takes the resume, as it ran before the call.
      if (!wasPaused && !(error instanceof TopicHasRunningJobsError)) this.resumeInBackground(topic);
      throw error;
    }
  }

  private async obliteratePaused(
    topic: string,
    shards: readonly TopicKeys[],
    force: boolean,
    wasPaused: boolean,
  ): Promise<{ keys: number; jobs: number; schedules: number }> {
    await this.setPaused(topic, true);
    const before = await Promise.all(shards.map((keys) => topicStatsScript.call(this.connection, keys, {})));
    const running = await Promise.all(
      shards.map(async (keys) => before[shards.indexOf(keys)].active + Number(await this.connection.command('zcard', groupsHeldKey(keys)))),
    );
    const runningTotal = running.reduce((sum, n) => sum + n, 0);
    if (runningTotal > 0 && !force) {
      if (!wasPaused) await this.setPaused(topic, false);
      throw new TopicHasRunningJobsError(topic, runningTotal);
    }
    // Waiting jobs go through drain first: a waitFor() of one of them hears it was cancelled.
    await this.drain(topic);
    let schedules = 0;
    for (let page = await this.repeats.list(topic); page.length > 0; page = await this.repeats.list(topic)) {
      let removed = 0;
      for (const { id } of page) if (await this.repeats.remove(topic, id)) removed++;
      schedules += removed;
      if (removed === 0) break; // listed but gone already: nothing left to remove
    }
    let keys = 0;
    // A sharded topic's own name is a family too (keys a feature keeps per topic rather than per shard).
    const families = shards.length > 1 ? [...shards, this.keySpace.topic(topic)] : shards;
    for (const shard of families) keys += await this.unlinkFamily(shard);
    const jobs = before.reduce((sum, s) => sum + s.waiting + s.active + s.dead + s.completed + s.grouped, 0);
    return { keys, jobs, schedules };
  }

  /**
   * Clears the pause a failed obliterate set, retrying with backoff (Redis unreachable) for up to
   * RESUME_RETRY_MS; never fails.
   */
  private resumeInBackground(topic: string): void {
    const until = performance.now() + RESUME_RETRY_MS;
    const attempt = (delay: number): void => {
      this.setPaused(topic, false).catch(() => {
        if (performance.now() + delay > until) return;
        setTimeout(() => attempt(Math.min(delay * 2, 5_000)), delay).unref();
      });
    };
    attempt(250);
  }

  /** UNLINKs every key of one shard's family but its schedules' removal records; resolves how many. */
  private async unlinkFamily(shard: TopicKeys): Promise<number> {
    const pattern = this.keySpace.topicFamilyPattern(shard.topic);
    let total = 0;
    for (;;) {
      // The whole keyspace is walked (no budget of SCAN calls): a scan cut short would leave keys of
      // the topic behind (its pause flag among them). A scan stops early only with OBLITERATE_SCAN_KEYS
      // keys found, which are then removed: the next scan, from the start, finds fewer.
      const { keys, truncated } = await this.connection.scanKeys(pattern, OBLITERATE_SCAN_KEYS, Infinity);
      const doomed = keys.filter((key) => key !== shard.repeatRemoved);
      for (let i = 0; i < doomed.length; i += REMOVAL_BATCH) {
        // One hash tag: one slot, so one UNLINK per batch also on a cluster. UNLINK frees in the background.
        total += Number(await this.connection.command('unlink', ...doomed.slice(i, i + REMOVAL_BATCH)));
      }
      if (!truncated) return total;
    }
  }

  /** Sets or clears every shard's pause flag; resolves whether any shard changed. */
  async setPaused(topic: string, paused: boolean): Promise<boolean> {
    const changed = await Promise.all(
      this.shards.all(topic).map((keys) => this.writer.runRecorded(pauseTopicScript, keys, { pause: paused })),
    );
    return changed.some((reply) => reply.changed);
  }

  /** Deletes one dead letter; false when the job is not dead (retried or deleted meanwhile). */
  async deleteDead(topic: string, id: string): Promise<boolean> {
    for (const keys of this.shardsOfJob(topic, id)) {
      if ((await this.writer.runRecorded(deleteDeadJobScript, keys, { id })).deleted) return true;
    }
    return false;
  }

  /** Cancels a job that is still waiting; a running job is left alone. */
  async cancelWaiting(topic: string, id: string): Promise<CancelWaitingOutcome> {
    for (const keys of this.shardsOfJob(topic, id)) {
      const outcome = await this.writer.runRecorded(cancelWaitingJobScript, keys, { id });
      if (outcome !== 'not-waiting') return outcome;
    }
    return 'not-waiting';
  }

  /** Requeues every dead letter of one shard. */
  private async retryAllDead(keys: TopicKeys): Promise<number> {
    // Bounded by what is dead now, so jobs that die again meanwhile are not chased forever.
    let remaining = await this.deadCount(keys);
    let total = 0;
    while (remaining > 0) {
      const args = { id: '', limit: Math.min(remaining, RETRY_DEAD_BATCH) };
      const { requeued: moved } = await this.writer.runRecorded(retryDeadJobsScript, keys, args);
      total += moved;
      if (moved === 0) break;
      remaining -= moved;
    }
    return total;
  }

  /** How many dead letters one shard holds now. */
  private async deadCount(shard: TopicKeys): Promise<number> {
    return (await topicStatsScript.call(this.connection, shard, {})).dead;
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
