import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib/index.js';
import { createLockApp, rawRedis } from '../support/test-app.js';
import { useAppOnLocalRedis } from '../support/use-local-redis-server.js';

/**
 * A late grant's give-back that Redis does not run (a 1 s CLIENT PAUSE ALL makes the grant late, lease
 * 300 ms; then a failover's CLIENT PAUSE WRITE, 10 s, PING still answered) bounds nothing: the call
 * still settles by its waitTimeout, by its aborted signal, and `tryAcquire` answers null at once, with
 * a short unreachableTimeout or a long one.
 */
describe('a late grant whose give-back Redis does not run', () => {
  const { server, app } = useAppOnLocalRedis(
    (redis) => createLockApp({ redis: redis.url }),
    (started) => started.close(),
  );
  let patient: TestingModule | undefined;
  afterAll(async () => patient?.close());
  const LEASE_MS = 300;
  const WAIT_MS = 1_500;
  const WRITE_PAUSE_MS = 10_000;

  it.each([
    ['default unreachableTimeout (2 s)', 'default'],
    ['unreachableTimeout: 30000', 'patient'],
    ['unreachableTimeout: 30000, options.signal aborted at 1.5 s (waitTimeout 5 s)', 'aborted'],
    ['unreachableTimeout: 30000, tryAcquire() (answers null at once: docs/locks.md)', 'try'],
  ])(
    '%s: the call settles by its waitTimeout (or its aborted signal, or at once for tryAcquire)',
    async (_name, which) => {
      if (which !== 'default') patient ??= await createLockApp({ redis: server.url, unreachableTimeout: 30_000 });
      const locks = (which === 'default' ? app : patient!).get(LockService);
      const callOptions =
        which === 'aborted'
          ? { leaseTime: LEASE_MS, waitTimeout: 5_000, signal: AbortSignal.timeout(WAIT_MS) }
          : { leaseTime: LEASE_MS, waitTimeout: WAIT_MS };
      await locks.tryAcquire('warm-up', { leaseTime: 1_000 }).then((h) => h?.release());
      const admin = rawRedis(server.url);
      const admin2 = rawRedis(server.url);
      await admin2.ping();
      try {
        // The try waits behind a full pause longer than its lease: its grant comes late.
        await admin.call('CLIENT', 'PAUSE', '1000', 'ALL');
        const started = performance.now();
        const call =
          which === 'try' ? locks.tryAcquire(`give-back-${which}`, callOptions) : locks.acquire(`give-back-${which}`, callOptions);
        const outcome = call.then(
          async (handle) => {
            await handle?.release().catch(() => undefined);
            return handle ? 'acquired' : 'null';
          },
          (error: unknown) => (error as Error).name,
        );
        // Queued behind the try (postponed clients run in arrival order): the writes pause begins right after the grant.
        await new Promise((resolve) => setTimeout(resolve, 200));
        void admin2.call('CLIENT', 'PAUSE', String(WRITE_PAUSE_MS), 'WRITE').catch(() => undefined);
        const what = await outcome;
        const elapsed = performance.now() - started;
        await admin2.call('CLIENT', 'UNPAUSE').catch(() => undefined);
        // Expected: settled (acquired, timed out or RedisConnectionError) by about waitTimeout, as the try itself is
        // (observed: RedisConnectionError ~3 s after the call, 1.5 s past waitTimeout: the give-back waits for the
        // connection's unreachableTimeout instead of the call's deadline).
        expect({ what, elapsedMs: Math.round(elapsed) }).toEqual({ what, elapsedMs: expect.any(Number) });
        expect(Math.round(elapsed)).toBeLessThan(WAIT_MS + 600);
      } finally {
        await admin2.call('CLIENT', 'UNPAUSE').catch(() => undefined);
        admin.disconnect();
        admin2.disconnect();
      }
    },
    30_000,
  );
});
