import type { HeldLock, LockHolder } from '../../interfaces/held-lock.interface.js';
import type { LockKindInspection } from '../../protocols/lock-kind.js';
import { readLockScript } from './read-lock.lua.js';

/**
 * The inspector's query of owner hashes (`<prefix>:lock:{name}`): mutex, fair and read/write locks,
 * each read with one script call on its own slot.
 */
export const OWNER_HASH_INSPECTION: LockKindInspection = {
  pattern: (keySpace) => keySpace.lockOwnersPattern(),
  nameOf: (keySpace, key) => keySpace.lockNameOf(key),
  async read(redis, keySpace, name): Promise<HeldLock | undefined> {
    const keys = keySpace.lock(name);
    const reply = await readLockScript.run<[number, string | null, number, string[], Array<string | number>] | null>(
      redis,
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
  },
};

/** An exclusive lock's owner hash may keep one field per hold next to its owner's count: '<owner>/<n>'. */
function isHoldOfOwner(field: string, fields: Map<string, string>): boolean {
  const slash = field.lastIndexOf('/');
  return slash > 0 && fields.has(field.slice(0, slash));
}
