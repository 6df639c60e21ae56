import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { JobVisibilityLostError } from '../../core/errors/job-visibility-lost.error.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { encodeProgress } from '../jobs/job-codec.js';
import { setProgressScript } from '../scripts/set-progress.lua.js';
import { controllerOf, isWatched, type HeldJob } from './held-job.js';
import type { VisibilityKeeper } from './visibility-keeper.js';

/** What progress records need from their consumer. */
interface JobProgressContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  /** The topic shard's keys. */
  readonly keys: TopicKeys;
  readonly visibility: VisibilityKeeper;
}

/**
 * Writes `JobContext.progress(value)` for the deliveries of one consumer: one script call, which
 * writes only while the job is claimed under this delivery's token. A delivery that lost its job
 * writes nothing: its signal is aborted (as a refused visibility extension would) and the call
 * rejects with the signal's reason. Not retried: a failed call rejects, and the handler decides.
 */
export class JobProgress {
  constructor(private readonly context: JobProgressContext) {}

  /**
   * @throws InvalidJobError (not JSON data, or too large), JobVisibilityLostError or the signal's
   *         reason (the job is no longer this delivery's), RedisConnectionError
   */
  async record(job: HeldJob, value: unknown): Promise<void> {
    const { topic, connection, keys, visibility } = this.context;
    const json = encodeProgress(topic, value);
    visibility.checkDeadline(job);
    if (!isWatched(job)) throw lossReason(job, topic);
    const args = { id: job.id, token: job.token, progressJson: JSON.stringify(json) };
    const recorded = await setProgressScript.call(connection, keys, args);
    if (recorded === 'held') return;
    if (recorded === 'cancelled') visibility.cancelled(job.token, job.id);
    else visibility.loseVisibility(job, 'not-owner');
    throw lossReason(job, topic);
  }
}

/** Why the delivery no longer holds its job: its signal's reason, when it was aborted with an Error. */
function lossReason(job: HeldJob, topic: string): Error {
  const reason: unknown = controllerOf(job).signal.reason;
  return reason instanceof Error ? reason : new JobVisibilityLostError(topic, job.id, 'not-owner');
}
