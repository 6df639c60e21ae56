import { jest } from '@jest/globals';
import { spawnFixture } from '../support/child-process.js';
import { useLocalPostgres } from '../support/use-local-postgres.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { within } from '../support/timing.js';
import { waitForLine } from '../support/wait-for-output.js';

jest.setTimeout(120_000);

/** Generous for a loaded machine; a hung shutdown never ends at all. */
const EXIT_WITHIN_MS = 30_000;

describe("graceful shutdown with the outbox relay on the application's own pg pool (PostgreSQL)", () => {
  const postgres = useLocalPostgres();

  it('SIGTERM ends the process although a provider calls pool.end() in onModuleDestroy; the relay stops quietly', async () => {
    const child = spawnFixture('outbox-pool-end-app.ts', [
      postgres.url,
      testRedisUrl(),
      uniquePrefix('outbox-pool-end'),
      'pool_end_outbox',
    ]);
    try {
      await waitForLine(child, /^READY$/, 60_000);
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (code, signal) => resolve({ code, signal })),
      );
      const sentAt = performance.now();
      child.kill('SIGTERM');
      const exit = await within(exited, EXIT_WITHIN_MS, 'the process to exit after SIGTERM').catch((error: Error) => {
        throw new Error(`${error.message}; its output:\n${child.output()}`);
      });
      const tookMs = performance.now() - sentAt;
      // Nest's shutdown hooks re-raise the signal once the application is closed.
      expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
      expect(child.output()).toContain('POOL ENDED');
      // A relay whose pool was ended stops without reporting failures.
      expect(child.output()).not.toMatch(/Outbox relay: look failed|Cannot use a pool after calling end|LISTEN connection failed/);
      expect(tookMs).toBeLessThan(EXIT_WITHIN_MS);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
