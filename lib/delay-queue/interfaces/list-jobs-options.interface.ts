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
