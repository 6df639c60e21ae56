import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { DelayQueueService, RedisConnectionError } from '../../lib/index.js';
import { createLockApp, uniquePrefix } from '../support/test-app.js';
import { useAppOnLocalRedis } from '../support/use-local-redis-server.js';
import { deferred, waitFor } from '../support/timing.js';

/**
 * A consumer started while Redis is out of reach (the bootstrap check off: `connectTimeout: 0`)
 * records its `groupConcurrency` once Redis is back: the write is counted into the outage and
 * retried, not warned about once and dropped (the topic's groups then kept the limit stored before).
 */
describe('groupConcurrency written during an outage', () => {
  const { server, app } = useAppOnLocalRedis(
    (redis) => createLockApp({ redis: redis.url, keyPrefix: uniquePrefix('glo'), connectTimeout: 0 }),
    (started) => started.close(),
  );

  it('is written once Redis is back, without a warning, and the groups run that many at once', async () => {
    const queue = app.get(DelayQueueService);
    const warnings: string[] = [];
    const logs: string[] = [];
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => void logs.push(String(message)));
    try {
      let bringBack!: () => void;
      const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
      // Down: a call fails with the typed error once the outage is known.
      await waitFor(
        async () => (await queue.stats('glo.t').catch((error: unknown) => error)) instanceof RedisConnectionError || undefined,
        30_000,
        'Redis to be out of reach',
      );
      const release = deferred();
      const running = new Set<number>();
      let most = 0;
      queue.consume<number>(
        'glo.t',
        async (seq) => {
          running.add(seq);
          most = Math.max(most, running.size);
          await release.promise;
          running.delete(seq);
        },
        { concurrency: 8, groupConcurrency: 3 },
      );
      // A call sent after the limit's write, on the same connection, fails once the unreachable
      // bound has passed: the write, sent first, has failed by then.
      expect(await queue.stats('glo.t').catch((error: unknown) => error)).toBeInstanceOf(RedisConnectionError);
      bringBack();
      await restarted;
      await waitFor(() => logs.find((line) => /reachable again/.test(line)), 30_000, 'the outage summary');
      expect(logs.find((line) => /reachable again/.test(line))).toMatch(/group limits set late: \d+/);
      await queue.scheduleMany(
        'glo.t',
        Array.from({ length: 6 }, (_, seq) => ({ payload: seq, group: 'x' })),
      );
      await waitFor(() => running.size === 3 || undefined, 30_000, 'three jobs of the group at once');
      release.resolve();
      await waitFor(async () => ((await queue.stats('glo.t')).due === 0 && running.size === 0) || undefined, 30_000, 'the group to finish');
      expect(most).toBe(3);
      expect(warnings.filter((w) => /groupConcurrency/.test(w))).toEqual([]);
    } finally {
      warn.mockRestore();
      log.mockRestore();
    }
  }, 90_000);
});
