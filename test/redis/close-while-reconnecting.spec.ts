import { spawnFixture } from '../support/child-process.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { waitForLine } from '../support/wait-for-output.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';

/**
 * ioredis waits 2 s (its `disconnectTimeout`) for a disconnected socket to close, on a timer only
 * that socket's close event clears. The module closed connections that were waiting to reconnect,
 * whose socket had closed already: each left that timer running, and the process stayed alive 2 s
 * after `app.close()` (jest: "did not exit one second after the test run has completed").
 */
const EXIT_AFTER_CLOSE_WITHIN_MS = 1_500;

describe('a process whose application closed while Redis was down', () => {
  const server = useLocalRedisServer();

  it('ends as soon as the application has closed: no connection keeps it alive', async () => {
    const child = spawnFixture('close-while-reconnecting.ts', [server.url, uniquePrefix('close-reconnecting')]);
    let bringBack!: () => void;
    let restarted: Promise<void> | undefined;
    try {
      await waitForLine(child, /^READY$/, 60_000);
      restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
      await waitFor(() => server.process.signalCode !== null, 10_000, 'redis-server to be killed');
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGUSR2');
      const closedLine = await waitForLine(child, /^CLOSED /, 30_000);
      const closedAt = performance.now();
      const code = await exited;
      const lingeredMs = performance.now() - closedAt;
      // The call before close() failed: the connections were waiting to reconnect when they closed.
      expect(closedLine).toBe('CLOSED RedisConnectionError');
      expect(code).toBe(0);
      expect(lingeredMs).toBeLessThan(EXIT_AFTER_CLOSE_WITHIN_MS);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      bringBack?.();
      await restarted;
    }
  });
});
