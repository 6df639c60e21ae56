import { Inject, Injectable, Logger, type Type } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaderElection, type LeadershipHooks, type LockHandle } from 'nestjs-redis-lock';
import { ReportLog } from './report-log.js';
import { REPORTS_LEADER_KEY, REPORTS_SETTINGS, type ResolvedReportsSettings } from './reports.settings.js';

/** Snapshots older than this many periods are dropped by the sweep. */
const SNAPSHOT_RETENTION_TICKS = 1_000;

/**
 * A leader-held task: while this instance leads `reports.leader`, it sweeps the reports' records
 * every `sweepEveryMs` (drops old snapshots, caps the run log). Work that needs no exactly-once per
 * tick, only one instance doing it at a time; the sweep is idempotent, so a leader that stalled past
 * its lease and sweeps once more before it notices does no harm (writes that must never come from
 * an old leader would be fenced with `lock.fencingToken`).
 *
 * Each term is recorded (instance, fencing token, start and end, and why it ended), and so is each
 * sweep, so the demo and the specs can check that one instance led at a time.
 *
 * `@LeaderElection`'s options are fixed where the class is declared; the lease comes from the
 * configuration, so `electedReportsLeader(ttl)` declares the elected class per application. With a
 * constant lease, decorate this class directly: `@LeaderElection('reports.leader', { ttl: 10_000 })`.
 */
@Injectable()
export class ReportsLeader implements LeadershipHooks {
  private readonly logger = new Logger('ReportsLeader');
  /** The current term's sweep loop; settles once its signal has aborted and the sweep in progress ended. */
  private sweeping: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: ReportLog,
    @Inject(REPORTS_SETTINGS) private readonly settings: ResolvedReportsSettings,
  ) {}

  onLeadershipAcquired(lock: LockHandle): void {
    this.logger.log(`${this.settings.instanceId} leads ${REPORTS_LEADER_KEY} (fencing token ${lock.fencingToken})`);
    // Not awaited by the election: the loop runs for the whole term and stops on lock.signal.
    this.sweeping = this.sweepUntilLost(lock);
  }

  async onLeadershipLost(lock: LockHandle): Promise<void> {
    // On a step-down the lock is released only after this resolves: the next leader starts after the
    // last sweep of this one has ended.
    await this.sweeping;
    const reason = (lock.signal.reason as Error | undefined)?.name;
    this.logger.log(`${this.settings.instanceId} no longer leads ${REPORTS_LEADER_KEY} (${reason})`);
    await this.record(() =>
      this.log.recordTerm({ instance: this.settings.instanceId, event: 'lost', fencingToken: lock.fencingToken, at: Date.now(), reason }),
    );
  }

  private async sweepUntilLost(lock: LockHandle): Promise<void> {
    const { instanceId: instance, sweepEveryMs } = this.settings;
    await this.record(() => this.log.recordTerm({ instance, event: 'acquired', fencingToken: lock.fencingToken, at: Date.now() }));
    while (!lock.signal.aborted) {
      await this.record(async () => {
        const prunedSnapshots = await this.log.prune(Date.now() - SNAPSHOT_RETENTION_TICKS * this.settings.snapshotEveryMs);
        await this.log.recordSweep({ instance, fencingToken: lock.fencingToken, at: Date.now(), prunedSnapshots });
      });
      await sleep(sweepEveryMs, undefined, { signal: lock.signal }).catch(() => undefined); // aborted: the term ended
    }
  }

  /** A failed write is logged; the next sweep tries again. */
  private async record(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      this.logger.warn(`Recording failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/** `ReportsLeader` elected on `reports.leader` with a lease of `ttl` ms. */
export function electedReportsLeader(ttl: number): Type<ReportsLeader> {
  @Injectable()
  @LeaderElection(REPORTS_LEADER_KEY, { ttl })
  class ElectedReportsLeader extends ReportsLeader {}
  return ElectedReportsLeader;
}
