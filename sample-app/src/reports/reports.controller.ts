import { Controller, Get, Inject } from '@nestjs/common';
import { DelayQueueService, LeaderElections } from 'nestjs-redis-lock';
import { ReportLog } from './report-log.js';
import { REPORTS_LEADER_KEY, REPORTS_SETTINGS, STOCK_SNAPSHOT_TOPIC, type ResolvedReportsSettings } from './reports.settings.js';

/** The reports' scheduled work as every instance sees it (the records are shared, in Redis). */
@Controller('reports')
export class ReportsController {
  constructor(
    private readonly log: ReportLog,
    private readonly delayQueue: DelayQueueService,
    private readonly elections: LeaderElections,
    @Inject(REPORTS_SETTINGS) private readonly settings: ResolvedReportsSettings,
  ) {}

  /** GET /reports/runs: the stock-snapshot schedule (next and last tick) and its runs, oldest first. */
  @Get('runs')
  async runs() {
    const [schedule] = await this.delayQueue.listRepeats(STOCK_SNAPSHOT_TOPIC);
    return { instance: this.settings.instanceId, everyMs: this.settings.snapshotEveryMs, schedule, runs: await this.log.runs() };
  }

  /** GET /reports/leader: whether this instance leads, every recorded term and the leaders' sweeps. */
  @Get('leader')
  async leader() {
    const status = this.elections.status().find((election) => election.key === REPORTS_LEADER_KEY);
    const [terms, sweeps] = await Promise.all([this.log.terms(), this.log.sweeps()]);
    return { instance: this.settings.instanceId, ttl: this.settings.leaderTtlMs, leader: status?.leader ?? false, status, terms, sweeps };
  }
}
