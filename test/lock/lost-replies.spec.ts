import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService, type LockHandle } from '../../lib/index.js';
import { acquireFairLockScript } from '../../lib/lock/kinds/fair/acquire-fair-lock.lua.js';
import { acquireLockScript } from '../../lib/lock/kinds/mutex/acquire-lock.lua.js';
import { releaseLockScript } from '../../lib/lock/kinds/mutex/release-lock.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { createLockApp, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { sleep } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

/** Resolves once `signal` has aborted (at once if it has). */
function aborted(signal: AbortSignal): Promise<void> {
  return signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

failOnUnhandledRejections({ after: 'each' });

/**
 * The exclusive (plain and fair) lock when one of its commands runs twice: ioredis re-sends a
 * command whose reply was lost when it reconnects, so Redis runs it a second time. Service `a`
 * talks to Redis through a fault proxy; service `b` (another process) talks to Redis directly.
 */
describe.each([
  { kind: 'plain', fair: false, acquireScript: acquireLockScript },
  { kind: 'fair', fair: true, acquireScript: acquireFairLockScript },
])('exclusive $kind lock: commands that run twice', ({ fair, acquireScript }) => {
  let proxy: FaultProxy;
  let appA: TestingModule;
  let appB: TestingModule;
  let a: LockService;
  let b: LockService;

  beforeAll(async () => {
    const keyPrefix = uniquePrefix('lost');
    proxy = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
    [appA, appB] = await Promise.all([
      createLockApp({ redis: proxy.url, keyPrefix, lock: { fair } }),
      createLockApp({ keyPrefix, lock: { fair } }),
    ]);
    appA.useLogger(false);
    a = appA.get(LockService);
    b = appB.get(LockService);
  });
  afterAll(async () => {
    await Promise.all([appA.close(), appB.close()]);
    await proxy.stop();
  });
  afterEach(() => {
    proxy.setLatency(0);
    proxy.heal();
  });

  /** Matches a script run on the lock `name` (its first key is the owner hash `…{name}`). */
  const on = (name: string) => (keysAndArgs: readonly string[]) => keysAndArgs[0]?.endsWith(`{${name}}`) ?? false;

  /** Another process takes the lock right now, and lets it go again; false if it is held. */
  async function otherGetsItNow(name: string): Promise<boolean> {
    const other = await b.tryAcquire(name);
    await other?.release();
    return other !== null;
  }

  it('keeps the outer section holding the lock when a nested release runs twice', async () => {
    const name = 'nested-release';
    await a.using(name, async () => {
      const inner = await a.acquire(name);
      const lost = proxy.loseReply(FaultProxy.script(releaseLockScript, on(name)));
      await inner.release();
      await lost;
      // The outer section still runs: nobody else may hold the lock now.
      expect(await otherGetsItNow(name)).toBe(false);
    });
    expect(await otherGetsItNow(name)).toBe(true);
  });

  it('counts a nested acquire once when it runs twice, so the last release frees the lock', async () => {
    const name = 'nested-acquire';
    const outer = await a.acquire(name);
    await a.runInScope(outer, async () => {
      const lost = proxy.loseReply(FaultProxy.script(acquireScript, on(name)));
      const inner = await a.acquire(name);
      await lost;
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await inner.release();
      expect(await otherGetsItNow(name)).toBe(false);
    });
    await outer.release();
    expect(await otherGetsItNow(name)).toBe(true);
  });

  it('frees the lock when the outer hold is released before a nested one and both releases run twice', async () => {
    const name = 'out-of-order';
    const outer = await a.acquire(name);
    let inner!: LockHandle;
    await a.runInScope(outer, async () => {
      inner = await a.acquire(name);
    });
    const lostOuter = proxy.loseReply(FaultProxy.script(releaseLockScript, on(name)));
    await outer.release();
    await lostOuter;
    // The nested hold is still open: the lock stays taken.
    expect(await otherGetsItNow(name)).toBe(false);
    const lostInner = proxy.loseReply(FaultProxy.script(releaseLockScript, on(name)));
    await inner.release();
    await lostInner;
    expect(await otherGetsItNow(name)).toBe(true);
  });

  it('never shortens the outer hold when a nested handle with a shorter lease is extended', async () => {
    const name = 'nested-extend';
    await a.using(name, async (outer) => {
      const inner = await a.acquire(name, { leaseTime: 300 });
      await inner.extend(300);
      await inner.release();
      // The outer hold is renewed by the watchdog with the module's 30 s lease and still runs.
      const error = await b.acquire(name, { waitTimeout: 1_500 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquireTimeoutError);
      expect(outer.held).toBe(true);
    });
    expect(await otherGetsItNow(name)).toBe(true);
  });

  it('releases in Redis a nested hold whose own short lease ran out locally', async () => {
    const name = 'nested-expired';
    await a.using(name, async () => {
      const inner = await a.acquire(name, { leaseTime: 300 });
      await aborted(inner.signal);
      expect(inner.held).toBe(false);
      await inner.release();
    });
    // Nothing of `a` is held any more: the lock is free now, not after the outer lease.
    const other = await b.acquire(name, { waitTimeout: 2_000 });
    await other.release();
  });

  it('undoes a nested acquire that succeeded in Redis after its caller gave up', async () => {
    const name = 'late-reentry';
    const outer = await a.acquire(name);
    await a.runInScope(outer, async () => {
      proxy.blackhole();
      const error = await a.acquire(name, { waitTimeout: 100 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquireTimeoutError);
    });
    // Queued behind the abandoned nested acquire; both reach Redis once the network heals.
    const released = outer.release();
    proxy.heal();
    await released;
    const other = await b.acquire(name, { waitTimeout: 2_000 });
    await other.release();
  });
});

describe('exclusive lock: renewals never shorten a hold of the same owner', () => {
  let appA: TestingModule;
  let appB: TestingModule;

  beforeAll(async () => {
    const keyPrefix = uniquePrefix('renew');
    // `a` renews its watched locks with a short lease, every 500 ms (long enough that a stall of this
    // loaded machine's event loop cannot cost the nested hold its renewal).
    [appA, appB] = await Promise.all([createLockApp({ keyPrefix, lock: { leaseTime: 1_500 } }), createLockApp({ keyPrefix })]);
  });
  afterAll(() => Promise.all([appA.close(), appB.close()]));

  it.each([false, true])('keeps an outer explicit lease when a nested watched hold is renewed (fair: %s)', async (fair) => {
    const a = appA.get(LockService);
    const b = appB.get(LockService);
    const name = `watched-inside-explicit-${fair}`;
    const outer = await a.acquire(name, { leaseTime: 10_000, fair });
    await a.runInScope(outer, async () => {
      const inner = await a.acquire(name, { fair });
      // Several watchdog ticks (every 1,500/3 ms) renew the nested hold.
      await sleep(1_600);
      expect(inner.held).toBe(true);
      await inner.release();
    });
    // Had a renewal shortened the outer lease to the watched 1.5 s, it would end within this wait.
    const error = await b.acquire(name, { waitTimeout: 2_500, fair }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquireTimeoutError);
    expect(outer.held).toBe(true);
    await outer.release();
  });
});
