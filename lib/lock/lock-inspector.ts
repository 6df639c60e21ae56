import { Injectable } from '@nestjs/common';
import { RedisKeySpace } from '../core/keys/redis-key-space.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { scanKeys } from '../core/redis/scan-keys.js';
import { readLockScript } from './kinds/mutex/read-lock.lua.js';
import { readSemaphoreScript } from './kinds/semaphore/read-semaphore.lua.js';

/** Scripts run at once while reading the locks found by a scan. */
const READ_PARALLELISM = 32;

/** The kind of a held lock. */
export type HeldLockKind = 'mutex' | 'read-write' | 'semaphore';

/** A holder of a lock: an owner id (`<clientId>:<contextId>`), its reentry count, mode and lease. */
export interface LockHolder {
  /** The owner id, `<clientId>:<contextId>` (for a semaphore: the permit's owner). */
  readonly owner: string;
  /** Reentry count (nested acquires by the same owner). */
  readonly count?: number;
  /** Read/write locks: 'read' or 'write'. */
  readonly mode?: 'read' | 'write';
  /** Lease left for this holder, in ms (read/write holders and semaphore permits have their own). */
  readonly leaseMs?: number;
}

/** A lock held at the time of the read. */
export interface HeldLock {
  /** Mutex, read/write lock or semaphore. */
  readonly kind: HeldLockKind;
  /** The lock's name as given to `LockService`, e.g. `order:42`. */
  readonly name: string;
  /** The Redis key of the owner hash (or semaphore zset). */
  readonly key: string;
  /** Its holders (a semaphore: the permits taken). */
  readonly holders: LockHolder[];
  /** Current value of the fencing counter: the token of the current holder(s); for a semaphore, the last one handed out. */
  readonly fencingToken: string | null;
  /** Lease left on the key, in ms (-1: no expiry). */
  readonly leaseMs: number;
  /** Waiters queued on a fair lock. */
  readonly waiting: number;
}

/** What `LockInspector.heldLocks` found. */
export interface HeldLocks {
  /** The locks found, at most `limit`. */
  readonly locks: HeldLock[];
  /** True when more locks exist than were listed (see `limit`), or the scan budget ran out. */
  readonly truncated: boolean;
}

/**
 * Read side of the locks, for add-ons such as the dashboard: the locks held right now, found by
 * SCAN for owner hashes and semaphore permit sets on every master, each then read with one script
 * on its own slot. A lock released between the scan and the read is left out. Changes nothing.
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

  /** Locks and semaphores held now, sorted by name then kind; at most `limit` of them. */
  async heldLocks(limit: number): Promise<HeldLocks> {
    const [lockKeys, semKeys] = await Promise.all([
      scanKeys(this.connection.client, this.keySpace.lockOwnersPattern(), limit),
      scanKeys(this.connection.client, this.keySpace.semaphorePermitsPattern(), limit),
    ]);
    const reads: Array<() => Promise<HeldLock | undefined>> = [];
    for (const key of lockKeys.keys) {
      const name = this.keySpace.lockNameOf(key);
      if (name !== undefined) reads.push(() => this.readLock(name));
    }
    for (const key of semKeys.keys) {
      const name = this.keySpace.semaphoreNameOf(key);
      if (name !== undefined) reads.push(() => this.readSemaphore(name));
    }
    const locks: HeldLock[] = [];
    for (let i = 0; i < reads.length; i += READ_PARALLELISM) {
      const batch = await Promise.all(reads.slice(i, i + READ_PARALLELISM).map((read) => read()));
      for (const lock of batch) if (lock) locks.push(lock);
    }
    locks.sort((a, b) => a.name.localeCompare(b.name) || a.kind.localeCompare(b.kind));
    const truncated = lockKeys.truncated || semKeys.truncated || locks.length > limit;
    return { locks: locks.slice(0, limit), truncated };
  }

  /** The lock (mutex, fair, read/write) named `name` if someone holds it now: one script call, no scan. */
  lock(name: string): Promise<HeldLock | undefined> {
    return this.readLock(name);
  }

  private async readLock(name: string): Promise<HeldLock | undefined> {
    const keys = this.keySpace.lock(name);
    const reply = await readLockScript.run<[number, string | null, number, string[], Array<string | number>] | null>(
      this.connection.client,
      [keys.owners, keys.fence, keys.queue, keys.leases],
      [],
    );
    if (!reply) return undefined;
    const [pttl, fence, waiting, fields, leaseRows] = reply;
    // A read/write lease member is a holder field, or one hold of it: '<holder>#<hold id>'. A
    // holder's lease is its longest hold's.
    const leases = new Map<string, number>();
    for (let i = 0; i < leaseRows.length; i += 2) {
      const member = String(leaseRows[i]);
      const holder = member.includes('#') ? member.slice(0, member.indexOf('#')) : member;
      leases.set(holder, Math.max(leases.get(holder) ?? 0, Number(leaseRows[i + 1])));
    }
    const values = new Map<string, string>();
    for (let i = 0; i < fields.length; i += 2) values.set(String(fields[i]), String(fields[i + 1]));
    const readWrite = values.has('mode');
    const holders: LockHolder[] = [];
    for (const [field, value] of values) {
      if (readWrite) {
        if (field === 'mode') continue;
        const mode = field.endsWith(':w') ? 'write' : field.endsWith(':r') ? 'read' : undefined;
        holders.push({ owner: mode ? field.slice(0, -2) : field, count: Number(value), mode, leaseMs: leases.get(field) });
      } else if (!isHoldOfOwner(field, values)) {
        holders.push({ owner: field, count: Number(value) });
      }
    }
    if (holders.length === 0) return undefined;
    return {
      kind: readWrite ? 'read-write' : 'mutex',
      name,
      key: keys.owners,
      holders,
      fencingToken: fence ?? null,
      leaseMs: Number(pttl),
      waiting: Number(waiting),
    };
  }

  private async readSemaphore(name: string): Promise<HeldLock | undefined> {
    const keys = this.keySpace.semaphore(name);
    const reply = await readSemaphoreScript.run<[string | null, Array<string | number>] | null>(
      this.connection.client,
      [keys.permits, keys.fence],
      [],
    );
    if (!reply) return undefined;
    const [fence, rows] = reply;
    const holders: LockHolder[] = [];
    for (let i = 0; i < rows.length; i += 2) holders.push({ owner: String(rows[i]), leaseMs: Number(rows[i + 1]) });
    return {
      kind: 'semaphore',
      name,
      key: keys.permits,
      holders,
      fencingToken: fence ?? null,
      leaseMs: Math.max(...holders.map((h) => h.leaseMs ?? 0)),
      waiting: 0,
    };
  }
}

/** An exclusive lock's owner hash may keep one field per hold next to its owner's count: '<owner>/<n>'. */
function isHoldOfOwner(field: string, fields: Map<string, string>): boolean {
  const slash = field.lastIndexOf('/');
  return slash > 0 && fields.has(field.slice(0, slash));
}
