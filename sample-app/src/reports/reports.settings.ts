import { instanceIdOf, type SampleConfig } from '../config/sample-config.js';

/** The repeatable job's topic; its schedule's id is the topic too (one schedule). */
export const STOCK_SNAPSHOT_TOPIC = 'reports.stock-snapshot';

/** The lock the reports' leader election campaigns for. */
export const REPORTS_LEADER_KEY = 'reports.leader';

/** The reports' settings with their defaults filled in. */
export interface ResolvedReportsSettings {
  /** This instance's name in the records. */
  readonly instanceId: string;
  readonly snapshotEveryMs: number;
  readonly leaderTtlMs: number;
  readonly sweepEveryMs: number;
  /** Prefix of the records' Redis keys (next to, not inside, the library's key space). */
  readonly keyPrefix: string;
}

export const REPORTS_DEFAULTS = { snapshotEveryMs: 60_000, leaderTtlMs: 10_000, sweepEveryMs: 5_000 } as const;

export const REPORTS_SETTINGS = Symbol('REPORTS_SETTINGS');

export function resolveReportsSettings(config: SampleConfig): ResolvedReportsSettings {
  return {
    instanceId: instanceIdOf(config),
    snapshotEveryMs: config.reports?.snapshotEveryMs ?? REPORTS_DEFAULTS.snapshotEveryMs,
    leaderTtlMs: config.reports?.leaderTtlMs ?? REPORTS_DEFAULTS.leaderTtlMs,
    sweepEveryMs: config.reports?.sweepEveryMs ?? REPORTS_DEFAULTS.sweepEveryMs,
    keyPrefix: `${config.keyPrefix}:reports`,
  };
}
