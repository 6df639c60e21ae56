import { useLockServicePair } from '../support/test-app.js';

/** Rejection expected when a name is taken as the other kind of lock than the one holding it. */
const kindConflict = (key: string) => ({ name: 'LockKindConflictError', code: 'LOCK_KIND_CONFLICT', key });

/**
 * One name is one kind of lock: an exclusive (plain or fair) lock and a read/write lock on the
 * same name are never both granted; whichever side finds the other kind holding is refused with
 * a typed error at once (it does not wait: the other kind never makes room for it).
 */
describe('lock kinds on one name', () => {
  const { a, b } = useLockServicePair('kinds', { lock: { leaseTime: 5_000 } });

  it('refuses the read and the write side while an exclusive lock holds the name', async () => {
    for (const fair of [false, true]) {
      const name = `ex-then-rw-${fair}`;
      const exclusive = await a.acquire(name, { fair });
      await expect(b.readWrite(name).read({ waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict(name));
      await expect(b.readWrite(name).write({ waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict(name));
      await expect(b.readWrite(name).tryRead()).rejects.toMatchObject(kindConflict(name));
      await expect(b.readWrite(name).tryWrite()).rejects.toMatchObject(kindConflict(name));
      expect(exclusive.held).toBe(true);
      await exclusive.release();
      expect(await a.isLocked(name)).toBe(false);
      // Nothing was left behind: the name is free for either kind again.
      const read = await b.readWrite(name).read({ waitTimeout: 1_000 });
      await read.release();
      expect(await b.isLocked(name)).toBe(false);
    }
  }, 20_000);

  it.each(['read', 'write'] as const)(
    'refuses a plain and a fair exclusive lock while the %s side holds the name',
    async (side) => {
      const name = `rw-then-ex-${side}`;
      const held = await a.readWrite(name)[side]();
      await expect(b.acquire(name, { waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict(name));
      await expect(b.acquire(name, { waitTimeout: 30_000, fair: true })).rejects.toMatchObject(kindConflict(name));
      await expect(b.tryAcquire(name)).rejects.toMatchObject(kindConflict(name));
      await expect(b.using([`${name}-other`, name], () => 'ran', { waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict(name));
      expect(await b.isLocked(`${name}-other`)).toBe(false);
      expect(held.held).toBe(true);
      await held.release();
      expect(await a.isLocked(name)).toBe(false);
      const exclusive = await b.acquire(name, { waitTimeout: 1_000 });
      await exclusive.release();
    },
    20_000,
  );

  it('refuses the other kind inside a section of one kind (nested acquires of the same name)', async () => {
    await a.using('nested-ex', async () => {
      await expect(a.readWrite('nested-ex').write({ waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict('nested-ex'));
      await expect(a.readWrite('nested-ex').read({ waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict('nested-ex'));
    });
    expect(await a.isLocked('nested-ex')).toBe(false);

    const write = await a.readWrite('nested-rw').write();
    await a.runInScope(write, async () => {
      await expect(a.acquire('nested-rw', { waitTimeout: 30_000 })).rejects.toMatchObject(kindConflict('nested-rw'));
    });
    await write.release();
    expect(await a.isLocked('nested-rw')).toBe(false);
  }, 20_000);

  it('keeps semaphores apart from locks of the same name', async () => {
    const permit = await a.semaphore('shared-name', 1).acquire();
    const lock = await b.acquire('shared-name', { waitTimeout: 1_000 });
    await lock.release();
    const read = await b.readWrite('shared-name').read({ waitTimeout: 1_000 });
    await read.release();
    await permit.release();
  });
});
