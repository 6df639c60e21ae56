import { LockLostError, LockNotHeldError } from '../../lib/index.js';
import { useLockServicePair } from '../support/test-app.js';
import { abortReason, within } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

describe('ownership', () => {
  // Two module instances on one prefix behave like two processes.
  const { keyPrefix, a, b } = useLockServicePair('own');

  it('never lets a stale holder release or extend the next holder’s lock', async () => {
    const stale = await a.acquire('own', { leaseTime: 100 });
    // Its lease runs out and nothing renews it (a fixed lease): the hold is lost.
    await within(abortReason(stale.signal), 10_000, 'the stale hold to be lost');
    expect(stale.signal.aborted).toBe(true);
    expect(stale.signal.reason).toBeInstanceOf(LockLostError);

    const current = await b.acquire('own', { leaseTime: 10_000 });
    expect(BigInt(current.fencingToken)).toBeGreaterThan(BigInt(stale.fencingToken));

    await expect(stale.extend(10_000)).rejects.toBeInstanceOf(LockNotHeldError);
    await stale.release();
    expect(await b.isLocked('own')).toBe(true);
    expect(current.held).toBe(true);
    await current.release();
    expect(await b.isLocked('own')).toBe(false);
  });

  it('refuses to extend a lock that was taken over while its lease timer had not fired yet', async () => {
    const first = await a.acquire('takeover', { leaseTime: 5_000 });
    const raw = (a as unknown as { connection: { client: import('ioredis').Redis } }).connection.client;
    await raw.del(new RedisKeySpace(keyPrefix).lock('takeover').owners);
    const second = await b.acquire('takeover', { leaseTime: 5_000 });
    await expect(first.extend()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(first.signal.aborted).toBe(true);
    expect(second.held).toBe(true);
    await second.release();
  });

  it('treats a second release as a no-op', async () => {
    const lock = await a.acquire('twice');
    await lock.release();
    const other = await b.acquire('twice');
    await lock.release();
    expect(await b.isLocked('twice')).toBe(true);
    await other.release();
  });

  it('issues a larger fencing token on every fresh acquire', async () => {
    const tokens: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      const service = i % 2 === 0 ? a : b;
      const lock = await service.acquire('fence');
      tokens.push(BigInt(lock.fencingToken));
      await lock.release();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });
});
