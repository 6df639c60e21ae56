import type { DelayQueueStats } from '../../delay-queue/interfaces/delayed-job.interface.js';

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

export type DashboardJobState = 'due' | 'scheduled' | 'active' | 'dead';

/** A job as listed (payload shortened) or inspected (payload whole). */
export interface DashboardJob {
  readonly id: string;
  readonly state: DashboardJobState;
  readonly attempts: number;
  readonly maxAttempts?: number;
  readonly createdAt: number;
  /** Due time of a waiting job. */
  readonly dueAt?: number;
  /** Visibility deadline of a running job. */
  readonly visibleUntil?: number;
  /** When a dead job died. */
  readonly diedAt?: number;
  readonly lastError?: string;
  /** The payload as JSON text, shortened to a preview in lists. */
  readonly payloadPreview: string;
  /** Length of the whole payload's JSON text. */
  readonly payloadLength: number;
}

/** GET <path>/api/topics/:topic/jobs?state=&limit= */
export interface DashboardJobList {
  readonly topic: string;
  readonly state: DashboardJobState;
  readonly now: number;
  /** Jobs in that state, of which `jobs` are the first `limit`. */
  readonly total: number;
  readonly jobs: DashboardJob[];
}

/** GET <path>/api/topics/:topic/jobs/:id */
export interface DashboardJobDetail extends Omit<DashboardJob, 'payloadPreview' | 'payloadLength'> {
  readonly topic: string;
  readonly payload: unknown;
}

export type DashboardLockKind = 'mutex' | 'read-write' | 'semaphore';

/** A holder of a lock: an owner id (`<clientId>:<contextId>`), its reentry count, mode and lease. */
export interface DashboardLockHolder {
  readonly owner: string;
  /** Reentry count (nested acquires by the same owner). */
  readonly count?: number;
  /** Read/write locks: 'read' or 'write'. */
  readonly mode?: 'read' | 'write';
  /** Lease left for this holder, in ms (read/write holders and semaphore permits have their own). */
  readonly leaseMs?: number;
}

/** One row of GET <path>/api/locks */
export interface DashboardLock {
  readonly kind: DashboardLockKind;
  /** The lock's name as given to `LockService`, e.g. `order:42`. */
  readonly name: string;
  /** The Redis key of the owner hash (or semaphore zset). */
  readonly key: string;
  readonly holders: DashboardLockHolder[];
  /** Current value of the fencing counter: the token of the current holder(s); for a semaphore, the last one handed out. */
  readonly fencingToken: string | null;
  /** Lease left on the key, in ms (-1: no expiry). */
  readonly leaseMs: number;
  /** Waiters queued on a fair lock. */
  readonly waiting: number;
}

/** GET <path>/api/locks */
export interface DashboardLocks {
  readonly locks: DashboardLock[];
  /** True when more locks exist than were listed (see `maxLocks`), or the scan budget ran out. */
  readonly truncated: boolean;
}

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
