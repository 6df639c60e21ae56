import { Inject, Injectable } from '@nestjs/common';
import { DUE_SCORE_SLOTS } from '../../delay-queue/delay-queue.constants.js';
import { DelayQueueService } from '../../delay-queue/delay-queue.service.js';
import { decodeJob } from '../../delay-queue/job-codec.js';
import { assertValidTopic } from '../../delay-queue/topic-name.js';
import { InvalidJobError } from '../../errors/invalid-job.error.js';
import type { TopicShards } from '../../delay-queue/topic-shards.js';
import type { TopicKeys } from '../../keys/redis-key-space.js';
import { RedisConnection } from '../../redis/redis-connection.js';
import type {
  DashboardJob,
  DashboardJobDetail,
  DashboardJobList,
  DashboardJobState,
  DashboardTopics,
} from './dashboard-api.interface.js';
import { DashboardTopicRegistry } from './dashboard-topics.js';
import { DASHBOARD_TOPIC_SHARDS, PAYLOAD_PREVIEW_LENGTH } from './redis-lock-dashboard.constants.js';
import { cancelWaitingJobScript } from './scripts/cancel-waiting-job.lua.js';
import { deleteDeadJobScript } from './scripts/delete-dead-job.lua.js';
import { listJobsScript } from './scripts/list-jobs.lua.js';

export const JOB_STATES: readonly DashboardJobState[] = ['due', 'scheduled', 'active', 'dead'];

/** What `cancelWaiting` found. */
export type CancelOutcome = 'cancelled' | 'running' | 'not-waiting';

/**
 * The dashboard's reads and actions on delayed jobs. Counts, job lookup and retry go through the
 * public `DelayQueueService`; listing by state, deleting only a dead letter and cancelling only a
 * waiting job are small scripts of their own (one topic, one hash tag, so one cluster slot). A
 * sharded topic (`delayQueue.topics[topic].shards`) is shown as one: lists merge its shards, and
 * actions on one job go to the shard its id maps to.
 */
@Injectable()
export class DashboardQueue {
  constructor(
    @Inject(DASHBOARD_TOPIC_SHARDS) private readonly shards: TopicShards,
    private readonly connection: RedisConnection,
    private readonly queue: DelayQueueService,
    private readonly topics: DashboardTopicRegistry,
  ) {}

  async listTopics(): Promise<DashboardTopics> {
    const names = await this.topics.list();
    const results = await Promise.allSettled(names.map((topic) => this.queue.stats(topic)));
    const topics: DashboardTopics['topics'] = [];
    const errors: DashboardTopics['errors'] = [];
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') topics.push({ topic: names[i], ...result.value, handler: this.topics.isHandled(names[i]) });
      else errors.push({ topic: names[i], message: (result.reason as Error)?.message ?? String(result.reason) });
    });
    // Every topic failing means Redis is unreachable: an error answer, not an empty table.
    if (names.length > 0 && topics.length === 0) throw (results[0] as PromiseRejectedResult).reason;
    return { topics, errors };
  }

  async listJobs(topic: string, state: DashboardJobState, limit: number): Promise<DashboardJobList> {
    const perShard = await Promise.all(
      this.shardsOf(topic).map((keys) =>
        listJobsScript.run<Array<string | number | null>>(this.connection.client, scriptKeys(keys), [state, limit]),
      ),
    );
    let now = 0;
    let total = 0;
    let jobs: DashboardJob[] = [];
    for (const flat of perShard) {
      now = Math.max(now, Number(flat[0]));
      total += Number(flat[1]);
      for (let i = 2; i < flat.length; i += 5) {
        const header = flat[i + 2];
        jobs.push(toListedJob(String(flat[i]), state, String(flat[i + 1]), header === null ? null : String(header), String(flat[i + 3]), Number(flat[i + 4])));
      }
    }
    if (perShard.length > 1) jobs = jobs.sort(LIST_ORDER[state]).slice(0, limit);
    return { topic, state, now, total, jobs };
  }

  /** One job with its whole payload, or null when there is none. */
  async getJob(topic: string, id: string): Promise<DashboardJobDetail | null> {
    this.assertId(topic, id);
    const job = await this.queue.get(topic, id);
    if (!job) return null;
    return {
      topic,
      id: job.id,
      state: job.state,
      attempts: job.attempts,
      maxAttempts: job.maxAttempts,
      createdAt: job.createdAt.getTime(),
      dueAt: job.scheduledAt?.getTime(),
      visibleUntil: job.visibleUntil?.getTime(),
      diedAt: job.diedAt?.getTime(),
      lastError: job.lastError,
      payload: job.payload,
    };
  }

  /** Requeues one dead letter (due now, attempts reset); false when the job is not dead. */
  async retryDead(topic: string, id: string): Promise<boolean> {
    this.assertId(topic, id);
    return (await this.queue.retryDead(topic, id)) === 1;
  }

  /** Requeues every dead letter of the topic; resolves to how many. */
  retryAllDead(topic: string): Promise<number> {
    assertValidTopic(topic);
    return this.queue.retryDead(topic);
  }

  /** Deletes one dead letter; false when the job is not dead (retried or deleted meanwhile). */
  async deleteDead(topic: string, id: string): Promise<boolean> {
    this.assertId(topic, id);
    const keys = this.shards.forJob(topic, id);
    return (await deleteDeadJobScript.run<number>(this.connection.client, [keys.dead, keys.jobs], [id])) === 1;
  }

  /** Cancels a job that is still waiting; a running job is left alone. */
  async cancelWaiting(topic: string, id: string): Promise<CancelOutcome> {
    this.assertId(topic, id);
    const keys = this.shards.forJob(topic, id);
    const result = await cancelWaitingJobScript.run<number>(this.connection.client, [keys.due, keys.jobs, keys.active], [id]);
    return result === 1 ? 'cancelled' : result === -1 ? 'running' : 'not-waiting';
  }

  /** The keys of every shard of `topic` (one entry for a topic that is not sharded). */
  private shardsOf(topic: string): TopicKeys[] {
    assertValidTopic(topic);
    return this.shards.all(topic);
  }

  private assertId(topic: string, id: string): void {
    assertValidTopic(topic);
    if (typeof id !== 'string' || id.length === 0 || Buffer.byteLength(id) > 1024) {
      throw new InvalidJobError(topic, 'id', 'must be the non-empty id of a job (at most 1024 bytes)');
    }
  }
}

function scriptKeys(keys: TopicKeys): string[] {
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}

/** The order `listJobsScript` returns each state in, to merge the shards of a sharded topic the same way. */
const LIST_ORDER: Record<DashboardJobState, (a: DashboardJob, b: DashboardJob) => number> = {
  due: (a, b) => a.dueAt! - b.dueAt!,
  scheduled: (a, b) => a.dueAt! - b.dueAt!,
  active: (a, b) => a.visibleUntil! - b.visibleUntil!,
  dead: (a, b) => b.diedAt! - a.diedAt!,
};

/**
 * A listed job from what `listJobsScript` returns for it: the body's header (null when this library
 * did not write the body), the first bytes of the payload (of the raw body when unreadable) and the
 * payload's whole size in bytes.
 */
function toListedJob(id: string, state: DashboardJobState, score: string, header: string | null, head: string, bytes: number): DashboardJob {
  let job: { attempts: number; maxAttempts?: number; createdAt: number; lastError?: string };
  try {
    if (header === null) throw new Error(`Unreadable job body (written by hand or by an incompatible version): ${head.slice(0, 120)}`);
    job = decodeJob(`${header},"p":null}`); // the header alone, with a stand-in payload
  } catch (error) {
    job = { attempts: 0, createdAt: 0, lastError: (error as Error).message };
  }
  const times =
    state === 'due' || state === 'scheduled'
      ? { dueAt: Math.floor(Number(score) / DUE_SCORE_SLOTS) }
      : state === 'active'
        ? { visibleUntil: Number(score) }
        : { diedAt: Number(score) };
  return {
    id,
    state,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    createdAt: job.createdAt,
    ...times,
    lastError: job.lastError,
    payloadPreview: previewOf(head, bytes),
    payloadLength: bytes,
  };
}

/**
 * The first PAYLOAD_PREVIEW_LENGTH characters of the payload and '…' when there is more. `head`
 * holds at least that many whole characters whenever the payload is longer (PAYLOAD_PREVIEW_BYTES),
 * so a character cut by the byte limit never shows.
 */
function previewOf(head: string, bytes: number): string {
  const whole = Buffer.byteLength(head) === bytes;
  if (whole && head.length <= PAYLOAD_PREVIEW_LENGTH) return head;
  let preview = head.slice(0, PAYLOAD_PREVIEW_LENGTH);
  if (/[\uD800-\uDBFF]$/.test(preview)) preview = preview.slice(0, -1); // half of a surrogate pair
  return `${preview}…`;
}
