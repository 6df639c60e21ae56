import type { DelayQueueStats } from '../../delay-queue/interfaces/delayed-job.interface.js';
import type { ListedJob, ListedJobs, ListedJobState } from '../../delay-queue/topic-inspector.js';
import type { HeldLock, HeldLockKind, HeldLocks, LockHolder } from '../../lock/lock-inspector.js';

/*
 * The JSON the dashboard API answers. Times are epoch ms; `now` is the Redis server's clock at the
 * read, so "due in 3 s" is computed against the same clock the queue uses, whatever the browser's.
 */

/** GET <path>/api/meta */
export interface DashboardMeta {
  readonly readOnly: boolean;
  readonly refreshMs: number;
  readonly keyPrefix: string;
  readonly sampleMs: number;
  readonly windowMs: number;
  /** The header every POST must carry (any value), see `DASHBOARD_ACTION_HEADER`. */
  readonly actionHeader: string;
}

/** One row of GET <path>/api/topics */
export interface DashboardTopic extends DelayQueueStats {
  readonly topic: string;
  /** True when an `@OnDelayed` handler of this application consumes the topic. */
  readonly handler: boolean;
}

/** GET <path>/api/topics */
export interface DashboardTopics {
  readonly topics: DashboardTopic[];
  /** Topics whose counts could not be read (the message says why). */
  readonly errors: Array<{ topic: string; message: string }>;
}

export type DashboardJobState = ListedJobState;

/** A job as listed: payload shortened to a preview (see `DashboardJobDetail` for the whole job). */
export type DashboardJob = ListedJob;

/** GET <path>/api/topics/:topic/jobs?state=&limit= */
export type DashboardJobList = ListedJobs;

/** GET <path>/api/topics/:topic/jobs/:id */
export interface DashboardJobDetail extends Omit<DashboardJob, 'payloadPreview' | 'payloadLength'> {
  readonly topic: string;
  readonly payload: unknown;
}

export type DashboardLockKind = HeldLockKind;

/** A holder of a lock: an owner id (`<clientId>:<contextId>`), its reentry count, mode and lease. */
export type DashboardLockHolder = LockHolder;

/** One row of GET <path>/api/locks */
export type DashboardLock = HeldLock;

/** GET <path>/api/locks */
export type DashboardLocks = HeldLocks;

/** One sample of GET <path>/api/history */
export interface DashboardSample {
  readonly t: number;
  /** Due (backlog) count per topic; topics that could not be read are missing. */
  readonly due: Record<string, number>;
  readonly scheduled: number;
  readonly active: number;
  readonly dead: number;
  /** Handler starts in this process since the previous sample, with their lateness (ms). */
  readonly started: number;
  readonly latenessP50: number | null;
  readonly latenessP95: number | null;
  readonly latenessMax: number | null;
  readonly succeeded: number;
  readonly failed: number;
}

/** GET <path>/api/history */
export interface DashboardHistory {
  readonly sampleMs: number;
  readonly windowMs: number;
  readonly samples: DashboardSample[];
}
