import type { DelayedJobState } from './delayed-job.interface.js';

/** What `DelayQueueService.list()` reads: one state's jobs, a page at a time. */
export interface ListJobsOptions {
  /** Which jobs: `scheduled`, `due`, `waiting-group`, `active`, `dead` or `completed`. */
  readonly state: DelayedJobState;
  /** Jobs per page, 1 to 1000; default 100. */
  readonly limit?: number;
  /** The `cursor` the previous page of the same topic and state returned; absent for the first page. */
  readonly cursor?: string;
}

/** What `DelayQueueService.clean()` removes: finished jobs of one state, by age and count. */
export interface CleanJobsOptions {
  /** Dead letters (`dead`) or kept completed jobs (`completed`). */
  readonly state: 'dead' | 'completed';
  /** Only those that reached the state more than this many ms ago (Redis server clock); default 0: all. */
  readonly olderThan?: number;
  /** At most this many, oldest first; default: no limit. */
  readonly limit?: number;
}
