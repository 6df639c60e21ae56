import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample-config.js';
import { REPORTS_SETTINGS, type ResolvedReportsSettings } from './reports.settings.js';

/** One run of a `reports.stock-snapshot` tick: what the demo and the specs count per tick. */
export interface SnapshotRun {
  /** The tick (epoch ms, Redis server clock), read from the tick job's id. */
  readonly tick: number;
  readonly jobId: string;
  readonly instance: string;
  /** 1 unless the tick's job was retried or redelivered. */
  readonly attempt: number;
  readonly ranAt: number;
  /** Items and units in stock in this instance's database when the tick ran. */
  readonly items: number;
  readonly units: number;
}

/** A leadership term of `reports.leader` beginning or ending on one instance. */
export interface LeadershipRecord {
  readonly instance: string;
  readonly event: 'acquired' | 'lost';
  readonly fencingToken: string;
  readonly at: number;
  /** Why a term ended: `LeadershipSteppedDownError` (handed back) or `LockLostError` (lease lost). */
  readonly reason?: string;
}

/** One housekeeping sweep of the leader. */
export interface SweepRecord {
  readonly instance: string;
  readonly fencingToken: string;
  readonly at: number;
  readonly prunedSnapshots: number;
}

/** Runs kept in the log; the leader's sweep trims the rest. */
export const RUN_LOG_LIMIT = 10_000;
/** Leadership and sweep records kept (trimmed on each write). */
const RECORD_LIMIT = 1_000;

/**
 * The reports' records, in Redis so that every instance (each with its own embedded database when
 * there is no DATABASE_URL) reads the same ones. A client of its own, like the health check's: the
 * module's connections are the library's.
 *
 * Keys, under `<keyPrefix>:reports`: `runs` (list of `SnapshotRun`, oldest first), `snapshots` (hash
 * tick -> the first snapshot written for it, so a redelivered tick does not write another), `terms`
 * and `sweeps` (lists, in the order Redis received them).
 */
@Injectable()
export class ReportLog implements OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly keys: { runs: string; snapshots: string; terms: string; sweeps: string };

  constructor(@Inject(SAMPLE_CONFIG) config: SampleConfig, @Inject(REPORTS_SETTINGS) settings: ResolvedReportsSettings) {
    this.redis = new Redis(config.redisUrl, { lazyConnect: true });
    this.redis.on('error', () => undefined); // a failed command rejects; the job is retried
    const p = settings.keyPrefix;
    this.keys = { runs: `${p}:runs`, snapshots: `${p}:snapshots`, terms: `${p}:terms`, sweeps: `${p}:sweeps` };
  }

  /** Stores the tick's snapshot unless one is stored already (idempotent per tick), and logs the run. */
  async recordRun(run: SnapshotRun): Promise<void> {
    await this.redis
      .multi()
      .hsetnx(this.keys.snapshots, String(run.tick), JSON.stringify(run))
      .rpush(this.keys.runs, JSON.stringify(run))
      .exec()
      .then(failedInTransaction);
  }

  /** The last `limit` runs, oldest first. */
  async runs(limit = RUN_LOG_LIMIT): Promise<SnapshotRun[]> {
    return (await this.redis.lrange(this.keys.runs, -limit, -1)).map((line) => JSON.parse(line) as SnapshotRun);
  }

  async recordTerm(record: LeadershipRecord): Promise<void> {
    await this.append(this.keys.terms, record);
  }

  /** Leadership records, in the order Redis received them. */
  async terms(): Promise<LeadershipRecord[]> {
    return (await this.redis.lrange(this.keys.terms, 0, -1)).map((line) => JSON.parse(line) as LeadershipRecord);
  }

  async recordSweep(record: SweepRecord): Promise<void> {
    await this.append(this.keys.sweeps, record);
  }

  /** Sweep records, in the order Redis received them. */
  async sweeps(): Promise<SweepRecord[]> {
    return (await this.redis.lrange(this.keys.sweeps, 0, -1)).map((line) => JSON.parse(line) as SweepRecord);
  }

  /**
   * Housekeeping: drops snapshots of ticks before `before` and caps the run log. Idempotent, so a
   * leader that lost its lease without knowing yet and sweeps once more does no harm.
   * @returns how many snapshots were dropped
   */
  async prune(before: number): Promise<number> {
    const stale = (await this.redis.hkeys(this.keys.snapshots)).filter((tick) => Number(tick) < before);
    const transaction = this.redis.multi().ltrim(this.keys.runs, -RUN_LOG_LIMIT, -1);
    if (stale.length > 0) transaction.hdel(this.keys.snapshots, ...stale);
    await transaction.exec().then(failedInTransaction);
    return stale.length;
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }

  private async append(key: string, record: object): Promise<void> {
    await this.redis.multi().rpush(key, JSON.stringify(record)).ltrim(key, -RECORD_LIMIT, -1).exec().then(failedInTransaction);
  }
}

/** MULTI reports a failed command in its results, not by rejecting. */
function failedInTransaction(results: Array<[Error | null, unknown]> | null): void {
  const error = results?.find(([failure]) => failure)?.[0];
  if (error) throw error;
}
