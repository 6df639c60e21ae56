import { acquireReadLockScript } from '../../lib/lock/kinds/read-write/acquire-read-lock.lua.js';
import { acquireWriteLockScript } from '../../lib/lock/kinds/read-write/acquire-write-lock.lua.js';
import { releaseReadWriteLockScript } from '../../lib/lock/kinds/read-write/release-read-write-lock.lua.js';
import { renewReadWriteLocksScript } from '../../lib/lock/kinds/read-write/renew-read-write-locks.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { useProxiedLockPair } from '../support/use-proxied-lock-pair.js';
import { got } from '../support/lock-probes.js';
import { sleep } from '../support/timing.js';

/**
 * Read/write locks when a reply is lost: ioredis re-sends the command after reconnecting, so the
 * script runs twice. A nested acquire or release must count once, and no hold of an owner may
 * shorten another hold of the same owner.
 */
describe('read/write lock: commands that run twice', () => {
  // a: through the fault proxy; b: another process on the same keys, straight to Redis.
  const { proxy, a, b } = useProxiedLockPair('rwf');

  it.each(['read', 'write'] as const)('keeps the outer %s hold when the release of a nested hold runs twice', async (side) => {
    const name = `nested-release-${side}`;
    const outer = await a.readWrite(name)[side]();
    await a.runInScope(outer, async () => {
      const inner = await a.readWrite(name)[side]();
      const lost = proxy.loseReply(FaultProxy.script(releaseReadWriteLockScript));
      await inner.release();
      await lost;
      // The outer section still runs: nobody else may write (nor read, when it writes).
      expect(await got(b.readWrite(name).tryWrite())).toBe(false);
      if (side === 'write') expect(await got(b.readWrite(name).tryRead())).toBe(false);
    });
    expect(await a.isLocked(name)).toBe(true);
    await outer.release();
    expect(await a.isLocked(name)).toBe(false);
  });

  it.each([
    ['read', acquireReadLockScript],
    ['write', acquireWriteLockScript],
  ] as const)('counts a nested %s acquire once when it runs twice', async (side, script) => {
    const name = `nested-acquire-${side}`;
    const outer = await a.readWrite(name)[side]();
    await a.runInScope(outer, async () => {
      const lost = proxy.loseReply(FaultProxy.script(script));
      const inner = await a.readWrite(name)[side]();
      await lost;
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await inner.release();
    });
    await outer.release();
    expect(await a.isLocked(name)).toBe(false);
    expect(await got(b.readWrite(name).tryWrite())).toBe(true);
  });

  it('takes a fresh hold once when its acquire runs twice', async () => {
    const lost = proxy.loseReply(FaultProxy.script(acquireReadLockScript));
    const read = await a.readWrite('fresh').read();
    await lost;
    await read.release();
    expect(await a.isLocked('fresh')).toBe(false);
  });

  it.each(['read', 'write'] as const)('never lets a nested %s hold with a shorter lease shorten the outer hold', async (side) => {
    const name = `shorter-${side}`;
    const outer = await a.readWrite(name)[side]({ leaseTime: 20_000 });
    await a.runInScope(outer, async () => {
      const inner = await a.readWrite(name)[side]({ leaseTime: 100 });
      await inner.extend(100);
      await sleep(400);
      expect(await got(b.readWrite(name).tryWrite())).toBe(false);
      await inner.release();
    });
    expect(outer.held).toBe(true);
    expect(await got(b.readWrite(name).tryWrite())).toBe(false);
    await outer.release();
    expect(await a.isLocked(name)).toBe(false);
  });

  it('extends a hold once when its extend runs twice, and leaves the other holds of the owner as they were', async () => {
    const outer = await a.readWrite('extend-twice').write({ leaseTime: 800 });
    await a.runInScope(outer, async () => {
      const inner = await a.readWrite('extend-twice').read({ leaseTime: 20_000 });
      const lost = proxy.loseReply(FaultProxy.script(renewReadWriteLocksScript));
      await outer.extend(5_000);
      await lost;
      await sleep(1_000); // past the first 800 ms lease
      expect(outer.held).toBe(true);
      expect(await got(b.readWrite('extend-twice').tryRead())).toBe(false);
      await inner.release();
    });
    expect(await got(b.readWrite('extend-twice').tryRead())).toBe(false);
    await outer.release();
    expect(await a.isLocked('extend-twice')).toBe(false);
  });
});
