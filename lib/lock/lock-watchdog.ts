import calculateSlot from 'cluster-key-slot';
import type { RedisClient } from '../options/redis-lock-config';
import type { ReentrantLockHandle } from './reentrant-lock-handle';
import { renewLocksScript } from './scripts/renew-locks.lua';

/** Renewals per script call at most, so one call never blocks Redis for long. */
const MAX_KEYS_PER_RENEWAL = 500;

interface WatchedEntry {
  readonly redisKey: string;
  readonly owner: string;
  /** Every hold of this (key, owner) pair: nested re-entries share one Redis entry. */
  readonly handles: Set<ReentrantLockHandle>;
}

/**
 * Keeps alive the locks taken without an explicit lease: every lease/3 it renews all of them in
 * one script per cluster slot (one call in all on a single Redis). A lock that Redis no longer
 * lists for its owner is reported lost at once. A renewal that fails (Redis unreachable) is simply
 * tried again next tick; each handle's own lease deadline decides when it must be considered lost.
 *
 * The timer only runs while something is watched, and never keeps the process alive.
 */
export class LockWatchdog {
  private readonly entries = new Map<string, WatchedEntry>();
  private timer?: NodeJS.Timeout;
  private renewing = false;

  constructor(
    private readonly client: () => RedisClient,
    private readonly leaseTime: number,
    private readonly groupBySlot: boolean,
    private readonly onRenewalError: (error: unknown) => void,
  ) {}

  get watchedCount(): number {
    return this.entries.size;
  }

  watch(handle: ReentrantLockHandle): void {
    const id = `${handle.keys.owners}\n${handle.owner}`;
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { redisKey: handle.keys.owners, owner: handle.owner, handles: new Set() };
      this.entries.set(id, entry);
    }
    entry.handles.add(handle);
    if (!this.timer) {
      this.timer = setInterval(() => void this.renewAll(), Math.max(1, Math.floor(this.leaseTime / 3)));
      this.timer.unref();
    }
  }

  unwatch(handle: ReentrantLockHandle): void {
    const id = `${handle.keys.owners}\n${handle.owner}`;
    const entry = this.entries.get(id);
    if (!entry) return;
    entry.handles.delete(handle);
    if (entry.handles.size === 0) this.entries.delete(id);
    if (this.entries.size === 0) this.stop();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Renews every watched lock now. Never rejects. */
  async renewAll(): Promise<void> {
    if (this.renewing || this.entries.size === 0) return;
    this.renewing = true;
    try {
      await Promise.all(this.batches().map((batch) => this.renewBatch(batch)));
    } finally {
      this.renewing = false;
    }
  }

  private batches(): WatchedEntry[][] {
    const groups = new Map<number, WatchedEntry[]>();
    for (const entry of this.entries.values()) {
      const slot = this.groupBySlot ? calculateSlot(entry.redisKey) : 0;
      let group = groups.get(slot);
      if (!group) groups.set(slot, (group = []));
      group.push(entry);
    }
    const batches: WatchedEntry[][] = [];
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_KEYS_PER_RENEWAL) batches.push(group.slice(i, i + MAX_KEYS_PER_RENEWAL));
    }
    return batches;
  }

  private async renewBatch(batch: WatchedEntry[]): Promise<void> {
    const sentAt = performance.now();
    let renewed: number[];
    try {
      renewed = await renewLocksScript.run<number[]>(
        this.client(),
        batch.map((e) => e.redisKey),
        [this.leaseTime, ...batch.map((e) => e.owner)],
      );
    } catch (error) {
      this.onRenewalError(error);
      return;
    }
    batch.forEach((entry, i) => {
      for (const handle of [...entry.handles]) {
        if (renewed[i] === 1) handle.leaseConfirmed(sentAt, this.leaseTime);
        else handle.markLost('not-owner');
      }
    });
  }
}
