import { Inject, Injectable } from '@nestjs/common';
import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error.js';
import { RedisKeySpace } from '../../keys/redis-key-space.js';
import { RedisConnection } from '../../redis/redis-connection.js';
import type { DashboardLock, DashboardLockHolder, DashboardLocks as DashboardLockList } from './dashboard-api.interface.js';
import { DASHBOARD_KEY_SPACE, REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { ResolvedDashboardOptions } from './resolve-dashboard-options.js';
import { escapeGlob, hashTagOf, scanKeys, unescapeKeyPart } from './scan-keys.js';
import { readLockScript } from './scripts/read-lock.lua.js';
import { readSemaphoreScript } from './scripts/read-semaphore.lua.js';

/** Scripts run at once while reading the locks found by a scan. */
const READ_PARALLELISM = 32;

/**
 * The locks held right now: SCAN for owner hashes (`<prefix>:lock:{name}`) and semaphore zsets
 * (`<prefix>:sem:{name}`) on every master, then read each with one script on its own slot.
 * A lock released between the scan and the read is simply left out.
 */
@Injectable()
export class DashboardLocks {
  constructor(
    @Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    @Inject(DASHBOARD_KEY_SPACE) private readonly keySpace: RedisKeySpace,
    private readonly connection: RedisConnection,
  ) {}

  async list(): Promise<DashboardLockList> {
    const lockBase = `${this.keySpace.prefix}:lock:`;
    const semBase = `${this.keySpace.prefix}:sem:`;
    const max = this.options.maxLocks;
    // `{*}` ends the pattern: the owner hash is the only key of a lock that ends with its hash tag.
    const [lockKeys, semKeys] = await Promise.all([
      scanKeys(this.connection.client, `${escapeGlob(lockBase)}{*}`, max),
      scanKeys(this.connection.client, `${escapeGlob(semBase)}{*}`, max),
    ]);
    const reads: Array<() => Promise<DashboardLock | undefined>> = [];
    for (const key of lockKeys.keys) {
      const tag = hashTagOf(key, lockBase);
      if (tag !== undefined && key.length === lockBase.length + tag.length + 2) reads.push(() => this.readLock(unescapeKeyPart(tag)).catch(skipForeignKey));
    }
    for (const key of semKeys.keys) {
      const tag = hashTagOf(key, semBase);
      if (tag !== undefined && key.length === semBase.length + tag.length + 2) reads.push(() => this.readSemaphore(unescapeKeyPart(tag)).catch(skipForeignKey));
    }
    const locks: DashboardLock[] = [];
    for (let i = 0; i < reads.length; i += READ_PARALLELISM) {
      const batch = await Promise.all(reads.slice(i, i + READ_PARALLELISM).map((read) => read()));
      for (const lock of batch) if (lock) locks.push(lock);
    }
    locks.sort((a, b) => a.name.localeCompare(b.name) || a.kind.localeCompare(b.kind));
    const truncated = lockKeys.truncated || semKeys.truncated || locks.length > max;
    return { locks: locks.slice(0, max), truncated };
  }

  private async readLock(name: string): Promise<DashboardLock | undefined> {
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
    const holders: DashboardLockHolder[] = [];
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

  private async readSemaphore(name: string): Promise<DashboardLock | undefined> {
    const keys = this.keySpace.semaphore(name);
    const reply = await readSemaphoreScript.run<[string | null, Array<string | number>] | null>(
      this.connection.client,
      [keys.permits, keys.fence],
      [],
    );
    if (!reply) return undefined;
    const [fence, rows] = reply;
    const holders: DashboardLockHolder[] = [];
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

/** A key under the prefix that this library cannot have written (a name it would refuse) is not a lock of ours. */
function skipForeignKey(error: unknown): undefined {
  if (error instanceof InvalidLockKeyError) return undefined;
  throw error;
}
