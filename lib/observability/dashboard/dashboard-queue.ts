import { Inject, Injectable, Optional } from '@nestjs/common';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';
import { DelayQueueService } from '../../delay-queue/delay-queue.service.js';
import { assertJobAddress } from '../../delay-queue/job-address.js';
import type { CancelWaitingOutcome, JobCommands } from '../../delay-queue/job-commands.js';
import type { TopicInspector } from '../../delay-queue/topic-inspector.js';
import { dedupeOf } from '../../delay-queue/listed-job.js';
import { assertValidTopic } from '../../core/keys/topic-name.js';
import type { DashboardJobDetail, DashboardJobList, DashboardJobState, DashboardTopics } from './dashboard-api.interface.js';
import { DashboardTopicRegistry } from './dashboard-topics.js';
import { PAYLOAD_PREVIEW_LENGTH } from './redis-lock-dashboard.constants.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

/**
 * The dashboard's reads and actions on delayed jobs, in the shape its API answers. Retry, pause, drain
 * and clean go through the public `DelayQueueService`; counts (with the topic's rate-limit block),
 * job lookup (with its dedupe) and job lists through the core's `TopicInspector`; deleting only a
 * dead letter and cancelling only a waiting job through its `JobCommands`.
 */
@Injectable()
export class DashboardQueue {
  constructor(
    // Optional only so that a RedisLockModule the dashboard cannot see is reported by name (below).
    @Optional() private readonly queue: DelayQueueService,
    @Optional() @Inject(REDIS_LOCK_INTERNALS) internals: RedisLockInternals | undefined,
    private readonly topics: DashboardTopicRegistry,
  ) {
    requireRedisLockModule('RedisLockDashboardModule', { DelayQueueService: queue, TopicInspector: internals?.topicInspector });
    this.inspector = internals!.topicInspector;
    this.commands = internals!.jobCommands;
  }

  private readonly inspector: TopicInspector;
  private readonly commands: JobCommands;

  async listTopics(): Promise<DashboardTopics> {
    const names = await this.topics.list();
    const results = await Promise.allSettled(names.map((topic) => this.inspector.topicState(topic)));
    const topics: DashboardTopics['topics'] = [];
    const errors: DashboardTopics['errors'] = [];
    results.forEach((result, i) => {
      if (result.status === 'rejected') {
        errors.push({ topic: names[i], message: errorMessage(result.reason) });
        return;
      }
      const { stats, blockedUntil } = result.value;
      const block = blockedUntil === undefined ? {} : { rateLimitedUntil: blockedUntil };
      topics.push({ topic: names[i], ...stats, handler: this.topics.isHandled(names[i]), ...block });
    });
    // Every topic failing means Redis is unreachable: an error answer, not an empty table.
    if (names.length > 0 && topics.length === 0) throw (results[0] as PromiseRejectedResult).reason;
    return { topics, errors };
  }

  listJobs(topic: string, state: DashboardJobState, limit: number): Promise<DashboardJobList> {
    return this.inspector.listJobs(topic, state, limit, PAYLOAD_PREVIEW_LENGTH);
  }

  /** One job with its whole payload, or null when there is none. */
  async getJob(topic: string, id: string): Promise<DashboardJobDetail | null> {
    assertJobAddress(topic, id);
    const [record, logs] = await Promise.all([this.inspector.jobRecord(topic, id), this.queue.logs(topic, id)]);
    if (!record) return null;
    const { job } = record;
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
      finishedAt: job.finishedAt?.getTime(),
      lastError: job.lastError,
      progress: job.progress,
      ...(job.priority > 0 ? { priority: job.priority } : {}),
      ...dedupeOf(record.dedupe),
      result: job.result,
      payload: job.payload,
      ...(logs.length > 0 ? { logs } : {}),
    };
  }

  /** Requeues one dead letter (due now, attempts reset); false when the job is not dead. */
  async retryDead(topic: string, id: string): Promise<boolean> {
    assertJobAddress(topic, id);
    return (await this.queue.retryDead(topic, id)) === 1;
  }

  /** Pauses or resumes the topic on every instance; resolves whether its state changed. */
  setPaused(topic: string, paused: boolean): Promise<boolean> {
    assertValidTopic(topic);
    return paused ? this.queue.pause(topic) : this.queue.resume(topic);
  }

  /** Requeues every dead letter of the topic; resolves to how many. */
  retryAllDead(topic: string): Promise<number> {
    assertValidTopic(topic);
    return this.queue.retryDead(topic);
  }

  /** Removes every waiting job of the topic (running ones stay); resolves to how many. */
  drain(topic: string): Promise<number> {
    return this.queue.drain(topic);
  }

  /** Removes every dead letter, or every kept completed job, of the topic; resolves to how many. */
  clean(topic: string, state: 'dead' | 'completed'): Promise<number> {
    return this.queue.clean(topic, { state });
  }

  /** Deletes one dead letter; false when the job is not dead (retried or deleted meanwhile). */
  deleteDead(topic: string, id: string): Promise<boolean> {
    return this.commands.deleteDead(topic, id);
  }

  /** Cancels a job that is still waiting; a running job is left alone. */
  cancelWaiting(topic: string, id: string): Promise<CancelWaitingOutcome> {
    return this.commands.cancelWaiting(topic, id);
  }
}
