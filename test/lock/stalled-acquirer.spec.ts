import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService } from '../../lib/index.js';
import { createLockApp, rawRedis, uniquePrefix } from '../support/test-app.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';

const WAIT_MS = 1_000;

/** Blocks this process's event loop for `ms` (a busy loop: a GC pause, a CPU-starved or busy process). */
function stallEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/**
 * An acquire whose own process stalls past the call's waitTimeout right after its try was sent:
 * Redis answers within the stall, and the reply waits unread in the socket. Timers run before the
 * I/O of a turn, so the try's deadline fires first; it must not decide on a reply it has not read
 * (the 'lost-replies' › 'plain lock nested release' failure under load: an arranging acquire of a
 * free lock failed as held by another owner while the event loop was stalled for seconds).
 */
describe('an acquire whose process stalls past its waitTimeout while the reply waits unread', () => {
  let apps: TestingModule[] = [];
  // A server of its own: one case pauses it (CLIENT PAUSE stops every client of the server).
  const server = useLocalRedisServer();

  afterEach(async () => {
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
  });

  async function start(keyPrefix: string): Promise<LockService> {
    const app = await createLockApp({ redis: server.url, keyPrefix, lock: { waitTimeout: WAIT_MS } });
    apps.push(app);
    const locks = app.get(LockService);
    // The acquire script is in Redis's cache: the try under test is one round trip (no NOSCRIPT fallback).
    await (await locks.acquire('warm-up')).release();
    return locks;
  }

  it('a free lock: the grant Redis sent during the stall is taken, and the lock is held by the caller', async () => {
    const keyPrefix = uniquePrefix('stalled-free');
    const locks = await start(keyPrefix);
    const outcome = locks.acquire('free').then(
      (handle) => ({ handle }),
      (error: unknown) => ({ error }),
    );
    stallEventLoop(3 * WAIT_MS);
    const result = await outcome;
    expect(result).toEqual({ handle: expect.objectContaining({ key: 'free', held: true }) });
    const { handle } = result as { handle: Awaited<ReturnType<LockService['acquire']>> };
    // Still held after the turn: no background undo of an "abandoned" grant took it away.
    expect(await locks.isLocked('free')).toBe(true);
    await handle.release();
    expect(await locks.isLocked('free')).toBe(false);
  });

  it('a lock held by another instance: LockAcquireTimeoutError (Redis answered: it is held), not a connection error', async () => {
    const keyPrefix = uniquePrefix('stalled-held');
    const [locks, other] = [await start(keyPrefix), await start(keyPrefix)];
    const holder = await other.acquire('busy');
    const outcome = locks.acquire('busy').then(
      () => 'acquired',
      (error: unknown) => error,
    );
    stallEventLoop(3 * WAIT_MS);
    expect(await outcome).toBeInstanceOf(LockAcquireTimeoutError);
    expect(holder.held).toBe(true);
    await holder.release();
  });

  it('a lock held by another instance, Redis answering just after the stall: LockAcquireTimeoutError, not a connection error', async () => {
    // Writes are flushed after the current turn: the try goes out only when the stall ends. Redis,
    // paused until a little after that, answers later than the deadline's check after the stall;
    // the time this process was stalled is not Redis's silence.
    const keyPrefix = uniquePrefix('stalled-slow');
    const [locks, other] = [await start(keyPrefix), await start(keyPrefix)];
    const holder = await other.acquire('busy');
    const admin = rawRedis(server.url);
    try {
      await admin.call('CLIENT', 'PAUSE', String(3 * WAIT_MS + 150), 'ALL');
      const outcome = locks.acquire('busy').then(
        () => 'acquired',
        (error: unknown) => error,
      );
      stallEventLoop(3 * WAIT_MS);
      expect(await outcome).toBeInstanceOf(LockAcquireTimeoutError);
    } finally {
      admin.disconnect();
    }
    expect(holder.held).toBe(true);
    await holder.release();
  });
});
