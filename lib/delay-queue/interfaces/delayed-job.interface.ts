/**
 * Where a job is: waiting for its time (`scheduled`), waiting and already due (`due`), a job of a
 * group waiting in its group's queue for its group's turn, due or not (`waiting-group`), claimed by
 * a consumer (`active`), in the dead-letter set after its last attempt failed (`dead`), or done and
 * kept because its consumer has `keepCompleted` (`completed`). A job of a group waiting for a retry
 * keeps its group's turn and reads `scheduled` or `due`.
 *
 * @inline
 */
export type DelayedJobState = 'scheduled' | 'due' | 'waiting-group' | 'active' | 'dead' | 'completed';

/**
 * A stored job, as returned by `DelayQueueService.get()`, `list()` and `deadLetters()`. `T` is the
 * payload's type and `R` the result's (both from the `Topic` token when one is passed, else `unknown`).
 */
export interface DelayedJob<T = unknown, R = unknown> {
  /** The job id. */
  readonly id: string;
  /** The job's topic. */
  readonly topic: string;
  /** The payload, as scheduled (decoded from JSON). */
  readonly payload: T;
  /** Where the job is now. */
  readonly state: DelayedJobState;
  /** Deliveries so far (a running job counts its current delivery). */
  readonly attempts: number;
  /** Set when the job was scheduled with its own `maxAttempts`. */
  readonly maxAttempts?: number;
  /** When the job was first scheduled (Redis server clock); for a job a call replaced (`replace`, a debounce), that call's time. */
  readonly createdAt: Date;
  /** Due time of a `scheduled`, `due` or `waiting-group` job. */
  readonly scheduledAt?: Date;
  /** Visibility deadline of an `active` job: it returns to the queue then unless extended or acknowledged. */
  readonly visibleUntil?: Date;
  /** When a `dead` job got there. */
  readonly diedAt?: Date;
  /** When a `completed` job's acknowledgement reached Redis (Redis server clock). */
  readonly finishedAt?: Date;
  /**
   * What the handler of a `completed` job returned (decoded from JSON); absent when it returned
   * nothing (`undefined`) or a value that is not JSON data (a warning was logged).
   */
  readonly result?: R;
  /** The last value a handler passed to `JobContext.progress()`, in any state (kept through retries). */
  readonly progress?: unknown;
  /** Message of the last failure, if any (`Name: message` for an `Error`). */
  readonly lastError?: string;
  /**
   * Stack of the last failure when the handler threw an `Error` (its first line repeats `lastError`),
   * followed by its `cause` chain as Node prints it (`[cause]: <the cause's stack>`, at most 3 levels).
   * At most about 8000 characters: a long message is cut (to 2000 characters), then the frames as whole
   * lines, so the frames are kept. Absent for anything else thrown, and for failures recorded by an older version.
   */
  readonly lastErrorStack?: string;
  /**
   * The job's group, when it has one. A job waiting for its group's turn reads `waiting-group` (with its
   * `scheduledAt`); `stats()` counts it in `grouped`.
   */
  readonly group?: string;
  /** The job's priority among due jobs (`schedule(…, { priority })`, smaller first); 0 when it has none. */
  readonly priority: number;
}

/** Counts of one topic, from one consistent snapshot. */
export interface DelayQueueStats {
  /** Waiting for a time still in the future. */
  readonly scheduled: number;
  /** Due but not yet claimed by a consumer (the backlog). */
  readonly due: number;
  /** Claimed and running (or about to). */
  readonly active: number;
  /** In the dead-letter set. */
  readonly dead: number;
  /** Repeatable schedules of the topic (`repeat()`, `@OnDelayed({ repeat })`); their queued ticks count as jobs above. */
  readonly schedules: number;
  /** The topic is paused (`DelayQueueService.pause`): consumers claim nothing until `resume`. */
  readonly paused: boolean;
  /**
   * Jobs waiting in their group's queue (`waiting-group`: not counted in `scheduled` or `due`), including
   * each group's next job, until a consumer claims it.
   */
  readonly grouped: number;
  /** Groups with a job running or waiting for its retry. */
  readonly busyGroups: number;
  /**
   * Groups whose turn has come with a job due now: a consumer's next claim can start one job of each
   * (of `grouped`). `due + readyGroups` is what the topic's consumers could start now: the backlog.
   */
  readonly readyGroups: number;
  /** Completed jobs kept (`keepCompleted`); absent when the topic keeps none. */
  readonly completed?: number;
}
