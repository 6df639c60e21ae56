import { Injectable } from '@nestjs/common';
import { RedisKeySpace } from '../core/keys/redis-key-space.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import type { HeldLock } from './interfaces/held-lock.interface.js';
import { LOCK_KINDS } from './kinds/all-lock-kinds.js';
import { MUTEX } from './kinds/mutex/mutex.kind.js';
import type { LockKindInspection } from './protocols/lock-kind.js';

/** Scripts run at once while reading the locks found by a scan. */
const READ_PARALLELISM = 32;

/** The inspections of every key family, one per kind that owns one. */
const INSPECTIONS: readonly LockKindInspection[] = LOCK_KINDS.flatMap((kind) => (kind.inspection ? [kind.inspection] : []));

/** What `LockInspector.heldLocks` found. */
export interface HeldLocks {
  /** The locks found, at most `limit`. */
  readonly locks: HeldLock[];
  /** True when more locks exist than were listed (see `limit`), or the scan budget ran out. */
  readonly truncated: boolean;
}

/**
 * Read side of the locks, for add-ons such as the dashboard: the locks held right now, found by
 * SCAN on every master for the one key each lock of a kind's key family has (see each kind's
 * `inspection`), each then read with one script on its own slot. A lock released between the scan
 * and the read is left out. Changes nothing.
 */
@Injectable()
export class LockInspector {
  constructor(
    private readonly connection: RedisConnection,
    private readonly keySpace: RedisKeySpace,
  ) {}

  /** The prefix of every key of this module (`keyPrefix`). */
  get keyPrefix(): string {
    return this.keySpace.prefix;
  }

  /** Locks of every kind held now, sorted by name then kind; at most `limit` of them. */
  async heldLocks(limit: number): Promise<HeldLocks> {
    const { connection, keySpace } = this;
    const scans = await Promise.all(INSPECTIONS.map((inspection) => connection.scanKeys(inspection.pattern(keySpace), limit)));
    const reads: Array<() => Promise<HeldLock | undefined>> = [];
    INSPECTIONS.forEach((inspection, i) => {
      for (const key of scans[i].keys) {
        const name = inspection.nameOf(keySpace, key);
        if (name !== undefined) reads.push(() => inspection.read(connection, keySpace, name));
      }
    });
    const locks: HeldLock[] = [];
    for (let i = 0; i < reads.length; i += READ_PARALLELISM) {
      const batch = await Promise.all(reads.slice(i, i + READ_PARALLELISM).map((read) => read()));
      for (const lock of batch) if (lock) locks.push(lock);
    }
    locks.sort((a, b) => a.name.localeCompare(b.name) || a.kind.localeCompare(b.kind));
    const truncated = scans.some((scan) => scan.truncated) || locks.length > limit;
    return { locks: locks.slice(0, limit), truncated };
  }

  /** The lock (mutex, fair, read/write) named `name` if someone holds it now: one script call, no scan. */
  lock(name: string): Promise<HeldLock | undefined> {
    return MUTEX.inspection!.read(this.connection, this.keySpace, name);
  }
}
