import { Module, type DynamicModule } from '@nestjs/common';
import type { SampleConfig } from '../config/sample-config.js';
import { ReportLog } from './report-log.js';
import { ReportsController } from './reports.controller.js';
import { ReportsLeader, electedReportsLeader } from './reports-leader.js';
import { REPORTS_SETTINGS, resolveReportsSettings } from './reports.settings.js';
import { StockSnapshotJob } from './stock-snapshot.job.js';

/**
 * Scheduled work across instances: a repeatable job (`reports.stock-snapshot`, each tick once) and
 * a leader-held task (`reports.leader`, one instance at a time), with their records at
 * GET /reports/runs and GET /reports/leader.
 */
@Module({})
export class ReportsModule {
  static register(config: SampleConfig): DynamicModule {
    const settings = resolveReportsSettings(config);
    return {
      module: ReportsModule,
      controllers: [ReportsController],
      providers: [
        { provide: REPORTS_SETTINGS, useValue: settings },
        ReportLog,
        StockSnapshotJob,
        { provide: ReportsLeader, useClass: electedReportsLeader(settings.leaderTtlMs) },
      ],
    };
  }
}
