import { hostname } from 'node:os';

/** Settings of the sample app, from the environment. */
export interface SampleConfig {
  /** HTTP port; 0 picks a free one. */
  readonly port: number;
  /** Redis to use; when unset, main.ts starts a private redis-server and sets it. */
  readonly redisUrl: string;
  /** PostgreSQL URL; when unset, an embedded PGlite database in memory. */
  readonly databaseUrl: string | undefined;
  /** How long an unpaid order lives before `order.expire` cancels it. */
  readonly orderExpiryMs: number;
  /** Prefix of the app's Redis keys. */
  readonly keyPrefix: string;
  /** Serve the dashboard (`/dashboard`) read-only: no retry, delete or cancel. Default false. */
  readonly dashboardReadOnly?: boolean;
  /** Sampling of the dashboard's plots; default every 5 s over the last 10 minutes. */
  readonly dashboardHistory?: { readonly sampleMs?: number; readonly windowMs?: number };
  /**
   * How long this instance's claim of outbox rows lasts (`OUTBOX_CLAIM_LEASE_MS`): if it dies right
   * after COMMIT, another instance relays its rows this long after. Default: the module's (60 s).
   */
  readonly outboxClaimLeaseMs?: number;
  /** This instance's name in the reports' and fulfilment steps' records (`INSTANCE_ID`); default `<hostname>:<pid>`. */
  readonly instanceId?: string;
  /**
   * How long each fulfilment step's work takes, in ms (`FULFILMENT_STEP_MS`; default 100): it stands
   * for the calls to the warehouse, the carrier and the mail service.
   */
  readonly fulfilmentStepMs?: number;
  /** The scheduled work of `reports/`; each setting has a default (see `REPORTS_DEFAULTS`). */
  readonly reports?: ReportsSettings;
}

/** Settings of the reports' scheduled work. */
export interface ReportsSettings {
  /** Period of the `reports.stock-snapshot` repeatable job, in ms (`REPORTS_SNAPSHOT_EVERY_MS`). */
  readonly snapshotEveryMs?: number;
  /** Lease of the `reports.leader` election, in ms: a crashed leader is replaced within it (`REPORTS_LEADER_TTL_MS`). */
  readonly leaderTtlMs?: number;
  /** Period of the leader's housekeeping sweep, in ms (`REPORTS_SWEEP_EVERY_MS`). */
  readonly sweepEveryMs?: number;
}

export const SAMPLE_CONFIG = Symbol('SAMPLE_CONFIG');

export function sampleConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const redisUrl = env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL is not set (main.ts starts a local redis-server when it is absent).');
  return {
    port: Number(env.PORT ?? 3000),
    redisUrl,
    databaseUrl: env.DATABASE_URL || undefined,
    orderExpiryMs: Number(env.ORDER_EXPIRY_MS ?? 5_000),
    keyPrefix: env.REDIS_KEY_PREFIX ?? 'sample',
    dashboardReadOnly: env.DASHBOARD_READ_ONLY === '1' || env.DASHBOARD_READ_ONLY === 'true',
    instanceId: env.INSTANCE_ID || undefined,
    fulfilmentStepMs: optionalNumber(env.FULFILMENT_STEP_MS),
    outboxClaimLeaseMs: optionalNumber(env.OUTBOX_CLAIM_LEASE_MS),
    reports: {
      snapshotEveryMs: optionalNumber(env.REPORTS_SNAPSHOT_EVERY_MS),
      leaderTtlMs: optionalNumber(env.REPORTS_LEADER_TTL_MS),
      sweepEveryMs: optionalNumber(env.REPORTS_SWEEP_EVERY_MS),
    },
  };
}

/** This instance's name in the records: `instanceId`, or `<hostname>:<pid>`. */
export function instanceIdOf(config: SampleConfig): string {
  return config.instanceId ?? `${hostname()}:${process.pid}`;
}

function optionalNumber(value: string | undefined): number | undefined {
  return value ? Number(value) : undefined;
}
