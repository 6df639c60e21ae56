/**
 * What `scheduleWithResult()` did with a job:
 * - `'created'`: no job had this id; the new one is stored;
 * - `'existing'`: a job with this id was waiting, running or dead; it was kept, the new one dropped;
 * - `'replaced'`: a job with this id existed and `replace: true` replaced it;
 * - `'deferred'`: called inside a transaction; the job is written after the commit (or relayed from
 *   the outbox), so which of the three happens is not known yet (and nothing is written on rollback).
 */
export type ScheduleStatus = 'created' | 'existing' | 'replaced' | 'deferred';

/**
 * The job id `schedule()` would return, and what scheduling did (see `ScheduleStatus`).
 * See docs/delayed-jobs.md (De-duplication you can see).
 *
 * @example
 * const { id, status } = await delayQueue.scheduleWithResult('mail.send', mail, { id: `welcome:${userId}` });
 * if (status === 'existing') log.debug(`welcome mail ${id} was already scheduled`);
 */
export interface ScheduleResult {
  /** The job id (given in `options.id`, or generated). */
  readonly id: string;
  /** What scheduling did with the job: created, found existing, replaced, or deferred past a transaction. */
  readonly status: ScheduleStatus;
}
