import { LockService, type LockHandle } from '../../lib/index.js';
import { createLockApp, rawRedis } from '../support/test-app.js';
import { useAppOnLocalRedis } from '../support/use-local-redis-server.js';

/** Lease of every acquire here; Redis is paused for twice as long, so each first grant arrives after it. */
const LEASE_MS = 500;
const PAUSE_MS = 2 * LEASE_MS;
const options = { leaseTime: LEASE_MS, waitTimeout: 5_000 };

/** One lock kind: how to wait for it, and how to try it once. */
interface Kind {
  acquire(locks: LockService, key: string): Promise<LockHandle>;
  tryAcquire(locks: LockService, key: string): Promise<LockHandle | null>;
}

const KINDS: Record<string, Kind> = {
  mutex: { acquire: (l, k) => l.acquire(k, options), tryAcquire: (l, k) => l.tryAcquire(k, options) },
  fair: { acquire: (l, k) => l.acquire(k, { ...options, fair: true }), tryAcquire: (l, k) => l.tryAcquire(k, { ...options, fair: true }) },
  read: { acquire: (l, k) => l.readWrite(k).read(options), tryAcquire: (l, k) => l.readWrite(k).tryRead(options) },
  write: { acquire: (l, k) => l.readWrite(k).write(options), tryAcquire: (l, k) => l.readWrite(k).tryWrite(options) },
  semaphore: { acquire: (l, k) => l.semaphore(k, 1).acquire(options), tryAcquire: (l, k) => l.semaphore(k, 1).tryAcquire(options) },
};

/**
 * Redis runs an acquire late (CLIENT PAUSE, as a failover's pause or a busy server would), after the
 * lease the client counts from the try's sending has ended. That grant is not handed out: it is
 * given back, `acquire`/`using` try again within their waitTimeout, `tryAcquire` answers null.
 * A Redis server of its own: the pauses stop every client of the server.
 */
describe('a grant that Redis runs after the lease counted locally', () => {
  const { server, app } = useAppOnLocalRedis(
    (redis) => createLockApp({ redis: redis.url }),
    (started) => started.close(),
  );
  const lockApp = { locks: () => app.get(LockService) };
  const pauseRedis = async (): Promise<void> => {
    const redis = rawRedis(server.url);
    try {
      await redis.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL');
    } finally {
      redis.disconnect();
    }
  };

  const scriptFlush = async (): Promise<void> => {
    const redis = rawRedis(server.url);
    try {
      await redis.call('SCRIPT', 'FLUSH');
    } finally {
      redis.disconnect();
    }
  };

  it.each([
    ['mutex', options],
    ['fair', { ...options, fair: true }],
  ])(
    '%s: using() runs its callback under a held handle',
    async (name, using) => {
      let seen: unknown = 'fn never ran';
      await pauseRedis();
      await lockApp.locks().using(`late-using-${name}`, (lock) => void (seen = { held: lock.held, aborted: lock.signal.aborted }), using);
      expect(seen).toEqual({ held: true, aborted: false });
    },
    20_000,
  );

  describe.each(Object.entries(KINDS))('%s', (name, kind) => {
    it('acquire() resolves a held handle, taken by a later try', async () => {
      const key = `late-acquire-${name}`;
      await pauseRedis();
      const lock = await kind.acquire(lockApp.locks(), key);
      const seen = { held: lock.held, aborted: lock.signal.aborted };
      await lock.release();
      expect(seen).toEqual({ held: true, aborted: false });
    }, 20_000);

    it('the late hold given back is not the one a later try takes (even when the give-back runs after that try)', async () => {
      const key = `late-kept-${name}`;
      // An empty script cache makes the give-back's EVALSHA fail with NOSCRIPT: its EVAL then goes to
      // Redis after the next try, which the acquire script (loaded by the first try) runs at once.
      await scriptFlush();
      await pauseRedis();
      const lock = await kind.acquire(lockApp.locks(), key);
      // Sent after the give-back on the same connection: Redis answers it once the give-back ran.
      const other = name === 'read' ? await lockApp.locks().readWrite(key).tryWrite(options) : await kind.tryAcquire(lockApp.locks(), key);
      const seen = { held: lock.held, otherGotIn: other !== null };
      await other?.release();
      await lock.release();
      expect(seen).toEqual({ held: true, otherGotIn: false });
    }, 20_000);

    it('tryAcquire() answers null and gives the late hold back at once', async () => {
      const key = `late-try-${name}`;
      await pauseRedis();
      const late = await kind.tryAcquire(lockApp.locks(), key);
      const seen = late && { held: late.held, aborted: late.signal.aborted };
      await late?.release();
      expect(seen).toBeNull();
      // The hand-back went to Redis before this try: an exclusive hold left there would refuse it.
      const next = name === 'read' ? await lockApp.locks().readWrite(key).tryWrite(options) : await kind.tryAcquire(lockApp.locks(), key);
      expect(next?.held).toBe(true);
      await next?.release();
    }, 20_000);
  });
});
