import { RedisLockError } from './redis-lock.error.js';

/**
 * Thrown by `DelayQueueService.obliterate(topic)` without `force` when jobs of the topic are running
 * (claimed by a consumer, or a cancelled job's handler still holding its group's turn): their
 * handlers would return into a topic that no longer exists. Nothing was removed; the topic is running
 * again. Stop its consumers (or wait for the jobs to finish), or pass `{ force: true }`.
 */
export class TopicHasRunningJobsError extends RedisLockError {
  readonly code = 'TOPIC_HAS_RUNNING_JOBS';

  constructor(
    /** The topic. */
    readonly topic: string,
    /** Jobs running when it was checked (with the group turns held by cancelled jobs' handlers). */
    readonly running: number,
  ) {
    super(
      `Topic ${JSON.stringify(topic)} has ${running} running job(s): obliterate() removed nothing. ` +
        'Stop its consumers or wait for the jobs to finish, or pass { force: true } to remove it anyway.',
    );
  }
}
