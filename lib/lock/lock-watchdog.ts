import { leaseRenewalInterval } from '../core/time/lease-policy.js';
import calculateSlot from 'cluster-key-slot';
import type { RedisTransport } from '../core/redis/redis-transport.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import type { Renewal } from './protocols/lock-protocol.interface.js';
import { runRenewal } from './protocols/run-renewal.js';

/** Renewals per script call at most, so one call never blocks Redis for long. */
const MAX_HOLDS_PER_RENEWAL = 500;

/** One renewed Redis entry. Its handles point back to it (`HeldLockHandle.watchdogEntry`). */
export interface WatchedEntry {
  readonly renewal: Renewal;
  /** Every handle of this Redis entry: nested re-entries share one. */
  readonly handles: Set<HeldLockHandle>;
}

/**
 * Keeps alive the locks taken without an explicit lease: every lease/3 it renews all of them with
 * one script call per lock kind and cluster slot (one call in all for plain locks on one Redis).
 * A hold that Redis no longer lists is reported lost at once. A renewal that fails (Redis
 * unreachable) is simply tried again next tick; each handle's own lease deadline decides when it
 * must be considered lost.
 *
 * The timer runs while something is watched (it stops at the first tick that finds nothing left,
 * rather than at each last unwatch, so a process that takes and releases one lock at a time does
 * not create an interval per hold), and never keeps the process alive.
 */
export class LockWatchdog {
  /**
   * Renewal member (owner id or holder field) -> the entries renewed under it: almost always one, as
   * an owner id belongs to one lock. Keyed by the member string the handle already holds (its hash
   * is computed once), not by a string built per watch.
   */
  private readonly entries = new Map<string, WatchedEntry[]>();
  private timer?: NodeJS.Timeout;
  private renewing = false;

  constructor(
    private readonly redis: Pick<RedisTransport, 'runScript'>,
    private readonly leaseTime: number,
    private readonly groupBySlot: boolean,
    private readonly onRenewalError: (error: unknown) => void,
  ) {}

  watch(handle: HeldLockHandle): void {
    if (handle.watchdogEntry) return;
    const renewal = handle.protocol.renewal(handle.owner, handle.hold);
    const sameMember = this.entries.get(renewal.member);
    let entry = sameMember?.find((e) => sameRedisEntry(e.renewal, renewal));
    if (!entry) {
      entry = { renewal, handles: new Set() };
      if (sameMember) sameMember.push(entry);
      else this.entries.set(renewal.member, [entry]);
    }
    entry.handles.add(handle);
    handle.watchdogEntry = entry;
    if (!this.timer) {
      this.timer = setInterval(() => void this.renewAll(), leaseRenewalInterval(this.leaseTime));
      this.timer.unref();
    }
  }

  unwatch(handle: HeldLockHandle): void {
    const entry = handle.watchdogEntry;
    if (!entry) return;
    handle.watchdogEntry = undefined;
    entry.handles.delete(handle);
    if (entry.handles.size > 0) return;
    const { member } = entry.renewal;
    const sameMember = this.entries.get(member);
    const at = sameMember ? sameMember.indexOf(entry) : -1;
    if (at < 0) return;
    if (sameMember!.length === 1) this.entries.delete(member);
    else sameMember!.splice(at, 1);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Renews every watched lock now. Never rejects. */
  async renewAll(): Promise<void> {
    this.dropOverdue();
    if (this.entries.size === 0) this.stop();
    if (this.renewing || this.entries.size === 0) return;
    this.renewing = true;
    try {
      await Promise.all(this.batches().map((batch) => this.renewBatch(batch)));
    } finally {
      this.renewing = false;
    }
  }

  /**
   * Marks lost (which unwatches them) the holds whose lease deadline has passed: after the event
   * loop was paused past a lease this beat runs before the deadline's own timer, and renewing such
   * a hold would keep in Redis, for another lease, a lock this process already counts as lost.
   */
  private dropOverdue(): void {
    const handles = [...this.entries.values()].flatMap((entries) => entries.flatMap((entry) => [...entry.handles]));
    for (const handle of handles) handle.checkLease();
  }

  private batches(): WatchedEntry[][] {
    const groups = new Map<string, WatchedEntry[]>();
    for (const entry of [...this.entries.values()].flat()) {
      const slot = this.groupBySlot ? calculateSlot(entry.renewal.keys[0]) : 0;
      const groupId = `${entry.renewal.target?.id ?? ''}:${entry.renewal.script.sha}:${slot}`;
      let group = groups.get(groupId);
      if (!group) groups.set(groupId, (group = []));
      group.push(entry);
    }
    const batches: WatchedEntry[][] = [];
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_HOLDS_PER_RENEWAL) batches.push(group.slice(i, i + MAX_HOLDS_PER_RENEWAL));
    }
    return batches;
  }

  private async renewBatch(batch: WatchedEntry[]): Promise<void> {
    const sentAt = performance.now();
    let renewed: number[];
    try {
      const { script, target } = batch[0].renewal;
      const renewals = batch.map((e) => e.renewal);
      renewed = target
        ? await target.renew(script, renewals, this.leaseTime)
        : await runRenewal(this.redis, script, renewals, this.leaseTime);
    } catch (error) {
      this.onRenewalError(error);
      return;
    }
    batch.forEach((entry, i) => {
      for (const handle of [...entry.handles]) {
        if (renewed[i] === 1) handle.leaseConfirmed(sentAt, this.leaseTime);
        else if (renewed[i] === 0) handle.markLost('not-owner');
        // -1 (a renewal target that could not confirm): the lease deadline decides.
      }
    });
  }
}

/** Whether two renewals renew the same Redis entry (nested holds of one owner share theirs). */
function sameRedisEntry(a: Renewal, b: Renewal): boolean {
  return a.script === b.script && a.member === b.member && a.keys.length === b.keys.length && a.keys.every((key, i) => key === b.keys[i]);
}
