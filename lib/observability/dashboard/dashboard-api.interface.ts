import type { DelayQueueStats } from '../../delay-queue/interfaces/delayed-job.interface.js';
import type { RepeatCatchUp, RepeatSchedule } from '../../delay-queue/interfaces/repeat-options.interface.js';
import type { ListedJob, ListedJobs, ListedJobState } from '../../delay-queue/listed-job.js';
import type { HeldLocks } from '../../lock/lock-inspector.js';
import type { LeaderElectionStatus } from '../../scheduling/leader-elections.js';

/*
 * The JSON the dashboard API answers. Times are epoch ms; `now` is the Redis server's clock at the
 * read, so "due in 3 s" is computed against the same clock the queue uses, whatever the browser's.
 */

/** GET <path>/api/meta */
export interface DashboardMeta {
  /** True when retry, delete and cancel are refused for this request (the `readOnly` option). */
  readonly readOnly: boolean;
  /** How often the page refreshes itself, in ms. */
  readonly refreshMs: number;
  /** The module's Redis key prefix. */
  readonly keyPrefix: string;
  /** How often queue depths are sampled for the plots, in ms (0: sampling off). */
  readonly sampleMs: number;
  /** How far back the plots reach, in ms. */
  readonly windowMs: number;
  /** The header every POST must carry (any value), see `DASHBOARD_ACTION_HEADER`. */
  readonly actionHeader: string;
}

/** One row of GET <path>/api/topics */
interface DashboardTopic extends DelayQueueStats {
  /** The topic. */
  readonly topic: string;
  /** True when an `@OnDelayed` handler of this application consumes the topic. */
  readonly handler: boolean;
  /**
   * While a handler's `JobRateLimitedError` holds the topic's claims on every instance: when they
   * resume (epoch ms, Redis server clock). Absent when nothing blocks them.
   */
  readonly rateLimitedUntil?: number;
}

/** GET <path>/api/topics */
export interface DashboardTopics {
  /** One row per topic whose counts were read. */
  readonly topics: DashboardTopic[];
  /** Topics whose counts could not be read (the message says why). */
  readonly errors: Array<{
    /** The topic. */
    topic: string;
    /** Why its counts could not be read. */
    message: string;
  }>;
}

/**
 * The states a job list shows: `due` and `scheduled` split the waiting jobs at the Redis server's now.
 *
 * @useDeclaredType
 */
export type DashboardJobState = ListedJobState;

/** One repeatable schedule of a topic (`repeat()`, `@OnDelayed({ repeat })`). */
interface DashboardSchedule {
  /** The schedule's id within its topic. */
  readonly id: string;
  /** When it runs (`every` or `cron`, as given to `repeat()`). */
  readonly schedule: RepeatSchedule;
  /** What happens to ticks missed while nothing ran. */
  readonly catchUp: RepeatCatchUp;
  /** The tick whose job is queued now; in the past while that job waits or runs. */
  readonly nextRunAt: number;
  /** The last tick a consumer claimed (absent before the first); its run may still be going, or have failed. */
  readonly lastRunAt?: number;
}

/** GET <path>/api/topics/:topic/schedules */
export interface DashboardSchedules {
  /** The topic listed. */
  readonly topic: string;
  /** The Redis server's clock at the read (ticks are on that clock). */
  readonly now: number;
  /** Soonest tick first. */
  readonly schedules: DashboardSchedule[];
}

/** A lease's lock as Redis holds it now, whichever instance took it. */
export interface DashboardLeaseInRedis {
  /** Read by name, one script call per lease: never cut off by `maxLocks`. */
  readonly state: 'held' | 'free';
  /** Owner ids (`<clientId>:<n>`; compare the client id with `DashboardScheduling.clientId`). */
  readonly owners: string[];
  /** The fencing token of the current holder. */
  readonly fencingToken: string | null;
  /** Lease left, in ms. */
  readonly leaseMs: number | null;
}

/** One `@OnOneInstance` lease of this application (methods sharing a key share a row). */
export interface DashboardOneInstanceLease {
  /** The lease key. */
  readonly key: string;
  /** The lease's time to live, in ms. */
  readonly ttl: number;
  /** The methods that run under it, `Class.method()`. */
  readonly methods: string[];
  /** Whether this instance holds the lease (as far as it knows: its next call confirms it in Redis). */
  readonly heldHere: boolean;
  /** This instance's fencing token of the lease, while it holds it. */
  readonly fencingToken?: string;
  /** Since when this instance holds it (epoch ms, this instance's clock). */
  readonly since?: number;
  /** The lease's lock as Redis holds it now. */
  readonly redis: DashboardLeaseInRedis;
  /** Whether a run holds the run lock (`<key>:run`) now, on any instance. */
  readonly running: boolean;
}

/** One `@LeaderElection` of this application: this instance's view, and its lock in Redis. */
export interface DashboardLeaderElection extends Omit<LeaderElectionStatus, 'since'> {
  /** Since when this instance leads (epoch ms, this instance's clock), as for a lease's `since`. */
  readonly since?: number;
  /** The election's lock as Redis holds it now. */
  readonly redis: DashboardLeaseInRedis;
}

/** GET <path>/api/scheduling */
export interface DashboardScheduling {
  /** False when the application has no scheduling providers (`OneInstanceLeases`, `LeaderElections`). */
  readonly available: boolean;
  /** This instance's lock client id: the first part of the owner ids it holds locks under. */
  readonly clientId: string;
  /** The `@OnOneInstance` leases of this application. */
  readonly oneInstance: DashboardOneInstanceLease[];
  /** The `@LeaderElection`s of this application. */
  readonly leaders: DashboardLeaderElection[];
}

/**
 * A job as listed: payload shortened to a preview (see `DashboardJobDetail` for the whole job).
 *
 * @useDeclaredType
 */
type DashboardJob = ListedJob;

/**
 * GET <path>/api/topics/:topic/jobs?state=&limit=
 *
 * @useDeclaredType
 */
export type DashboardJobList = ListedJobs;

/** GET <path>/api/topics/:topic/jobs/:id */
export interface DashboardJobDetail extends Omit<DashboardJob, 'payloadPreview' | 'payloadLength'> {
  /** The job's topic. */
  readonly topic: string;
  /** The whole payload, as scheduled. */
  readonly payload: unknown;
  /** What the handler of a kept completed job returned, if anything. */
  readonly result?: unknown;
  /** The job's log lines (`JobContext.log`), oldest first; absent when it logged nothing. */
  readonly logs?: readonly string[];
}

/**
 * GET <path>/api/locks
 *
 * @useDeclaredType
 */
export type DashboardLocks = HeldLocks;

/** One sample of GET <path>/api/history */
export interface DashboardSample {
  /** When the sample was taken (epoch ms, this process's clock). */
  readonly t: number;
  /** Due (backlog) count per topic; topics that could not be read are missing. */
  readonly due: Record<string, number>;
  /** Jobs waiting for a later time, all sampled topics together. */
  readonly scheduled: number;
  /** Jobs running, all sampled topics together. */
  readonly active: number;
  /** Dead letters, all sampled topics together. */
  readonly dead: number;
  /** Handler starts in this process since the previous sample, with their lateness (ms). */
  readonly started: number;
  /** Median lateness of those starts (ms); null when none started. */
  readonly latenessP50: number | null;
  /** 95th percentile of that lateness (ms); null when none started. */
  readonly latenessP95: number | null;
  /** Greatest lateness (ms); null when none started. */
  readonly latenessMax: number | null;
  /** Handlers that succeeded in this process since the previous sample. */
  readonly succeeded: number;
  /** Handlers that failed in this process since the previous sample. */
  readonly failed: number;
}

/** GET <path>/api/history */
export interface DashboardHistory {
  /** The sampling interval, in ms. */
  readonly sampleMs: number;
  /** How far back the samples reach, in ms. */
  readonly windowMs: number;
  /** Oldest first. */
  readonly samples: DashboardSample[];
}
