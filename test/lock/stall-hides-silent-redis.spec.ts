import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService, RedisConnectionError } from '../../lib/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { createLockApp, uniquePrefix } from '../support/test-app.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';
import { waitFor } from '../support/timing.js';

const WAIT_MS = 1_000;

/** Blocks this process's event loop for `ms` (a busy loop: a GC pause, a CPU-starved process). */
function stallEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/**
 * A try already written to a Redis that answers nothing (black-holed), and a short stall of this
 * process spanning the call's deadline: the silence since the try was written is Redis's, so the call
 * fails with RedisConnectionError, as without the stall, not with LockAcquireTimeoutError ("held by
 * someone else") although nobody holds the lock.
 */
describe('a stall across the deadline while Redis is silent', () => {
  const server = useLocalRedisServer();
  let proxy: FaultProxy | undefined;
  let app: TestingModule | undefined;
  afterEach(async () => {
    proxy?.heal();
    await app?.close();
    await proxy?.stop();
  });

  it.each([
    ['no stall', 0],
    ['a 300 ms stall across the deadline', 300],
  ])(
    '%s: RedisConnectionError naming Redis, not LockAcquireTimeoutError',
    async (_name, stallMs) => {
      proxy = await FaultProxy.start({ port: server.port });
      app = await createLockApp({ redis: proxy.url, keyPrefix: uniquePrefix('stall-silent'), lock: { waitTimeout: WAIT_MS } });
      const locks = app.get(LockService);
      await (await locks.acquire('warm-up')).release();
      const tries = proxy.observe((args) => /^eval/i.test(args[0] ?? ''));
      proxy.blackhole();
      const started = performance.now();
      const outcome = locks.acquire('free').then(
        () => 'acquired',
        (error: unknown) => error,
      );
      // The try is on the wire (written, not held in this process's buffers).
      await waitFor(() => tries.count > 0, 5_000, 'the try to reach the proxy');
      if (stallMs > 0) {
        // Arrangement, not the verdict: the stall starts shortly before the deadline and ends after it.
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, WAIT_MS - 150 - (performance.now() - started))));
        stallEventLoop(stallMs);
      }
      const error = await outcome;
      expect(error).not.toBeInstanceOf(LockAcquireTimeoutError);
      expect(error).toBeInstanceOf(RedisConnectionError);
    },
    20_000,
  );
});
