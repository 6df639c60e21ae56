import type { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { LockLostError, LockUpgradeError } from '../../lib/index.js';
import { rawRedis, useLockServicePair } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

describe('read/write lock', () => {
  // Two module instances on one prefix behave like two processes.
  const { keyPrefix, a, b } = useLockServicePair('rw', { lock: { leaseTime: 600 } });

  it('lets many readers in at once and keeps writers out while they read', async () => {
    const readers = await Promise.all([a.readWrite('doc').read(), b.readWrite('doc').read(), a.readWrite('doc').read()]);
    expect(readers.every((r) => r.held)).toBe(true);
    expect(await b.readWrite('doc').tryWrite()).toBeNull();
    await Promise.all(readers.map((r) => r.release()));
    const writer = await b.readWrite('doc').tryWrite();
    expect(writer).not.toBeNull();
    expect(await a.readWrite('doc').tryRead()).toBeNull();
    expect(await a.readWrite('doc').tryWrite()).toBeNull();
    await writer!.release();
    expect(await a.isLocked('doc')).toBe(false);
  });

  it('does not let a stream of readers starve a waiting writer', async () => {
    const firstReader = await a.readWrite('starve').read();
    const writer = b.readWrite('starve').write({ waitTimeout: 10_000 });
    // Once the writer waits, a new reader is held back, even though only readers hold the lock.
    const redis = rawRedis();
    try {
      const waitingWriters = new RedisKeySpace(keyPrefix).lock('starve').waitingWriters;
      await waitFor(async () => (await redis.zcard(waitingWriters)) === 1, 10_000, 'the writer to wait');
    } finally {
      redis.disconnect();
    }
    expect(await a.readWrite('starve').tryRead()).toBeNull();
    await firstReader.release();
    const held = await writer;
    expect(held.held).toBe(true);
    await held.release();
  });

  it('allows a writer to take the read side (downgrade) and refuses a reader the write side (upgrade)', async () => {
    const rw = a.readWrite('grade');
    const write = await rw.write();
    await a.runInScope(write, async () => {
      const read = await rw.read({ waitTimeout: 1_000 });
      expect(read.held).toBe(true);
      await write.release(); // now only the downgraded read hold is left
      const otherReader = await b.readWrite('grade').tryRead();
      expect(otherReader).not.toBeNull();
      expect(await b.readWrite('grade').tryWrite()).toBeNull();
      await otherReader!.release();
      await read.release();
    });

    const read = await rw.read();
    await a.runInScope(read, async () => {
      await expect(rw.write({ waitTimeout: 1_000 })).rejects.toBeInstanceOf(LockUpgradeError);
    });
    await read.release();
  });

  it('frees a crashed reader’s share when its lease ends, even while other readers keep renewing', async () => {
    await a.readWrite('crash').read({ leaseTime: 300 }); // never released: its process "crashed"
    const renewed = await b.readWrite('crash').read(); // watchdog-renewed, keeps the hash alive
    const writer = a.readWrite('crash').write({ waitTimeout: 10_000 });
    await sleep(500);
    await renewed.release();
    const held = await writer;
    expect(held.held).toBe(true);
    await held.release();
  });

  it('gives readers of one epoch the same fencing token and a writer a larger one', async () => {
    const r1 = await a.readWrite('fence').read();
    const r2 = await b.readWrite('fence').read();
    expect(r2.fencingToken).toBe(r1.fencingToken);
    await Promise.all([r1.release(), r2.release()]);
    const w = await a.readWrite('fence').write();
    expect(BigInt(w.fencingToken)).toBeGreaterThan(BigInt(r1.fencingToken));
    await w.release();
  });
});

describe('read/write lock watchdog', () => {
  // A 2 s lease (renewed every 667 ms): a 600 ms one can lose its renewal to a stall of a loaded CI
  // machine's event loop, and a lease that ran out is rightly lost.
  const { keyPrefix, a } = useLockServicePair('rwwd', { lock: { leaseTime: 2_000 } });

  it('keeps read and write holds alive with the watchdog, and reports a lost one', async () => {
    const read = await a.readWrite('wd').read();
    await sleep(6_500); // over three leases
    expect(read.held).toBe(true);
    await read.release();

    const write = await a.readWrite('wd').write();
    const raw = a as unknown as { connection: RedisConnection };
    await raw.connection.command('del', new RedisKeySpace(keyPrefix).lock('wd').owners);
    const reason = await new Promise((resolve) => write.signal.addEventListener('abort', () => resolve(write.signal.reason)));
    expect(reason).toBeInstanceOf(LockLostError);
  });
});
