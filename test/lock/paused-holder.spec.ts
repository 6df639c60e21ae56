import type { TestingModule } from '@nestjs/testing';
import { LockService, type LockHandle } from '../../lib/index.js';
import { pauseHolderPastLease } from '../support/pause-holder-past-lease.js';
import { createLockApp, uniquePrefix } from '../support/test-app.js';

const LEASE_MS = 1_000;
/** The taking-over instance's lease: long, so a stall of this test process on a loaded host does not end it. */
const TAKE_OVER_LEASE_MS = 30_000;
const WAIT = { waitTimeout: 30_000 };

/** How another instance takes each kind of lock over from the paused holder. */
const TAKE_OVER: Record<string, (locks: LockService) => Promise<LockHandle>> = {
  lock: (locks) => locks.acquire('paused', WAIT),
  'lock-lease': (locks) => locks.acquire('paused', WAIT),
  fair: (locks) => locks.acquire('paused', { ...WAIT, fair: true }),
  read: (locks) => locks.readWrite('paused').write(WAIT),
  write: (locks) => locks.readWrite('paused').write(WAIT),
  semaphore: (locks) => locks.semaphore('paused', 1).acquire(WAIT),
  multi: (locks) => locks.acquire(['paused:a', 'paused:b'], WAIT),
};

/**
 * A process paused (SIGSTOP) past its lease while another takes its lock: when it runs again, its
 * first timer turn must already see the lock lost, although its timers that were due before the
 * lease's end run first after the pause (issue 23, defect 5).
 */
describe('a holder paused past its lease sees the lock lost the moment it runs again', () => {
  let app: TestingModule | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it.each(Object.keys(TAKE_OVER))('%s: held is false and the signal aborted on the first turn after SIGCONT', async (kind) => {
    const keyPrefix = uniquePrefix(`paused-${kind}`);
    let next: LockHandle | undefined;
    const { heldToken: staleToken, seen } = await pauseHolderPastLease(kind, keyPrefix, LEASE_MS, async () => {
      app = await createLockApp({ keyPrefix, lock: { leaseTime: TAKE_OVER_LEASE_MS } });
      next = await TAKE_OVER[kind](app.get(LockService));
    });
    expect({ kind, ...seen }).toEqual({
      kind,
      gapMs: expect.any(Number),
      held: false,
      signalAborted: true,
      freshSignalAborted: true,
      contextAborted: true,
      throwsIfAborted: true,
    });
    expect(next!.held).toBe(true);
    expect(staleToken).not.toBe(next!.fencingToken);
    await next!.release();
  });
});
