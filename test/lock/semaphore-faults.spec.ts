import type { LockHandle } from '../../lib/index.js';
import { acquirePermitScript } from '../../lib/lock/kinds/semaphore/acquire-permit.lua.js';
import { releasePermitScript } from '../../lib/lock/kinds/semaphore/release-permit.lua.js';
import { renewPermitsScript } from '../../lib/lock/kinds/semaphore/renew-permits.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { useRawRedis } from '../support/test-app.js';
import { useProxiedLockPair } from '../support/use-proxied-lock-pair.js';
import { got } from '../support/lock-probes.js';
import { sleep } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/**
 * Semaphores when a reply is lost: ioredis re-sends the command after reconnecting, so the script
 * runs twice. The second run of an acquire must recognise the permit it already took.
 */
describe('semaphore: commands that run twice', () => {
  // a: through the fault proxy; b: another process on the same keys, straight to Redis.
  const { keyPrefix, proxy, a, b } = useProxiedLockPair('semf');
  const redis = useRawRedis();

  it.each([1, 2])('grants a re-sent acquire the permit it already took (permits: %i)', async (permits) => {
    const name = `resent-${permits}`;
    const lost = proxy.loseReply(FaultProxy.script(acquirePermitScript));
    const permit = await a.semaphore(name, permits).acquire({ waitTimeout: 2_000 });
    await lost;
    expect(permit.held).toBe(true);
    // The token it was granted, taken once: the counter did not move for the second run.
    expect(permit.fencingToken).toBe(await redis.get(new RedisKeySpace(keyPrefix).semaphore(name).fence));
    // It holds exactly one permit: the others are still free, and no more.
    const others: LockHandle[] = [];
    for (let i = 1; i < permits; i++) others.push((await b.semaphore(name, permits).tryAcquire())!);
    expect(others.every((o) => o?.held)).toBe(true);
    expect(await got(b.semaphore(name, permits).tryAcquire())).toBe(false);
    await Promise.all(others.map((o) => o.release()));
    await permit.release();
    // Nothing of the permit is left behind (its zset member nor its recorded grant).
    const keys = new RedisKeySpace(keyPrefix).semaphore(name);
    expect(await redis.exists(keys.permits, keys.grants)).toBe(0);
    expect(await got(b.semaphore(name, permits).tryAcquire())).toBe(true);
  });

  it('gives a permit back once when its release runs twice', async () => {
    const mine = await a.semaphore('release-twice', 2).acquire();
    const theirs = await b.semaphore('release-twice', 2).acquire();
    const lost = proxy.loseReply(FaultProxy.script(releasePermitScript));
    await mine.release();
    await lost;
    // Their permit is still counted: one free permit, not two.
    expect(theirs.held).toBe(true);
    const next = await b.semaphore('release-twice', 2).tryAcquire();
    expect(next).not.toBeNull();
    expect(await got(b.semaphore('release-twice', 2).tryAcquire())).toBe(false);
    await next!.release();
    await theirs.release();
  });

  it('extends a permit once when its extend runs twice', async () => {
    const permit = await a.semaphore('extend-twice', 1).acquire({ leaseTime: 800 });
    const lost = proxy.loseReply(FaultProxy.script(renewPermitsScript));
    await permit.extend(5_000);
    await lost;
    await sleep(1_000); // past the first 800 ms lease
    expect(permit.held).toBe(true);
    expect(await got(b.semaphore('extend-twice', 1).tryAcquire())).toBe(false);
    await permit.release();
    expect(await got(b.semaphore('extend-twice', 1).tryAcquire())).toBe(true);
  });
});
