import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DelayQueueService, OnDelayed, type JobContext } from 'nestjs-redis-lock';
import { Database } from '../database/database.js';
import { ReportLog } from './report-log.js';
import { REPORTS_SETTINGS, STOCK_SNAPSHOT_TOPIC, type ResolvedReportsSettings } from './reports.settings.js';

/**
 * A repeatable job: every `snapshotEveryMs`, one instance (whichever claims the tick) snapshots the
 * stock. Every instance registers the schedule at start; that is an upsert, so three instances make
 * one schedule, and each tick is one job that runs once across all of them.
 *
 * With a fixed period the decorator alone would do it:
 * `@OnDelayed(STOCK_SNAPSHOT_TOPIC, { repeat: { every: 60_000 } })`. Here the period comes from the
 * configuration, so the schedule is registered with `repeat()` at bootstrap instead.
 */
@Injectable()
export class StockSnapshotJob implements OnApplicationBootstrap {
  private readonly logger = new Logger(StockSnapshotJob.name);

  constructor(
    private readonly delayQueue: DelayQueueService,
    private readonly db: Database,
    private readonly log: ReportLog,
    @Inject(REPORTS_SETTINGS) private readonly settings: ResolvedReportsSettings,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // catchUp stays 'latest': after a downtime, one snapshot for the ticks missed, then on schedule.
    const schedule = await this.delayQueue.repeat(STOCK_SNAPSHOT_TOPIC, { every: this.settings.snapshotEveryMs });
    this.logger.log(`${STOCK_SNAPSHOT_TOPIC} every ${this.settings.snapshotEveryMs} ms, next tick ${schedule.nextRunAt.toISOString()}`);
  }

  /**
   * One tick. A tick redelivered after a crash may run again: the snapshot is written once per tick.
   *
   * `maxIdleWait: 1_000`: the next tick is watched by the instance that ran this one and by the one
   * its wake-up reached (a stopping instance hands its watch on). When one instance was both and is
   * SIGKILLed, the others find the tick at their next idle check (by default up to 10 s later), and a
   * tick more than 3 s late counts as missed (the catch-up rule then skips it). With ticks a few
   * seconds apart, as in the demo, looking every second keeps every tick, for two Redis commands per
   * second per instance; with a period of minutes the default is fine.
   */
  @OnDelayed(STOCK_SNAPSHOT_TOPIC, { visibilityTimeout: 5_000, maxIdleWait: 1_000 })
  async snapshot(_payload: null, job: JobContext): Promise<void> {
    const { rows } = await this.db.query<{ items: string | number; units: string | number }>(
      `SELECT count(*) AS items, coalesce(sum(stock), 0) AS units FROM items`,
    );
    await this.log.recordRun({
      tick: tickOf(job),
      jobId: job.id,
      instance: this.settings.instanceId,
      attempt: job.attempt,
      ranAt: Date.now(),
      items: Number(rows[0]?.items ?? 0),
      units: Number(rows[0]?.units ?? 0),
    });
  }
}

/** A tick's job id is `repeat:<schedule id>@<tick epoch ms>` (docs/scheduling.md); the tick stays the same on a retry. */
function tickOf(job: JobContext): number {
  const tick = Number(job.id.slice(job.id.lastIndexOf('@') + 1));
  return Number.isSafeInteger(tick) ? tick : job.scheduledAt.getTime();
}
