import { Redis } from 'ioredis';
import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib/index.js';
import { spawnFixture } from '../support/child-process.js';
import { createLockApp, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitForLine } from '../support/wait-for-output.js';
import { fencedWrite } from '../fixtures/fenced-store.js';
import { waitFor } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { WAITING_MARK } from '../../lib/lock/protocols/lua-snippets.js';

/** Lock holders in other processes that crash or freeze. */
describe('lock faults: holder processes killed or paused', () => {
  const keyPrefix = uniquePrefix('pf');
  let app: TestingModule;
  let locks: LockService;
  const redis = new Redis(testRedisUrl());

  beforeAll(async () => {
    app = await createLockApp({ keyPrefix, lock: { leaseTime: 1_000 } });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app.close();
    redis.disconnect();
  });

  it('frees the lock of a holder killed with SIGKILL within its lease, and a waiter gets it promptly', async () => {
    const holder = spawnFixture('lock-holder.ts', [testRedisUrl(), keyPrefix, 'killed', '1000', 'hold']);
    await waitForLine(holder, /^HELD /);
    const waiting = locks.acquire('killed', { waitTimeout: 20_000 });
    // The waiter was refused and parked on the holder's TTL: it marked the lock as awaited.
    await waitFor(
      async () => (await redis.hexists(new RedisKeySpace(keyPrefix).lock('killed').owners, WAITING_MARK)) === 1,
      10_000,
      'the waiter to park',
    );
    const killedAt = performance.now();
    holder.kill('SIGKILL');
    const lock = await waiting;
    const freedAfter = performance.now() - killedAt;
    // The watchdog renewed to a 1 s lease at most 1/3 s before the kill: free within ~1 s, no polling.
    expect(freedAfter).toBeLessThan(1_000 + 1_500);
    await lock.release();
  });

  it('aborts a paused holder’s signal and rejects its stale write after another holder took over', async () => {
    const store = `${keyPrefix}:store`;
    const paused = spawnFixture('lock-holder.ts', [testRedisUrl(), keyPrefix, 'paused', '1000', 'work', '2500']);
    const staleToken = (await waitForLine(paused, /^HELD /)).split(' ')[1];
    paused.kill('SIGSTOP'); // GC pause, VM freeze, debugger: the process runs no code at all

    try {
      const next = await locks.acquire('paused', { waitTimeout: 20_000 });
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(staleToken));
      expect(await fencedWrite(redis, store, next.fencingToken, 'written by the new holder')).toBe(true);

      paused.kill('SIGCONT');
      const report = JSON.parse(await waitForLine(paused, /^\{/));
      expect(report.token).toBe(staleToken);
      expect(report.abortedBeforeWrite).toBe(true);
      expect(['LOCK_LOST']).toContain(report.reason);
      expect(report.accepted).toBe(false);
      expect(await redis.hget(store, 'value')).toBe('written by the new holder');
      await next.release();
    } finally {
      paused.kill('SIGCONT');
      paused.kill('SIGKILL');
    }
  });
});
