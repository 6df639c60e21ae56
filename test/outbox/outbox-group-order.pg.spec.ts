import { jest } from '@jest/globals';
import { useFaultProxy } from '../support/use-fault-proxy.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { startOutboxApp, type RecordedRun } from './support/outbox-harness.js';
import { useOutboxPostgres } from './support/outbox-postgres.js';

jest.setTimeout(180_000);
afterEach(() => jest.restoreAllMocks());

const TABLE = 'group_order_outbox';

failOnUnhandledRejections();

/**
 * Instances P and Q share one PostgreSQL outbox and one topic. P reaches Redis through a loopback
 * proxy whose link is cut (nothing gets through) while it commits a job; Q, straight to Redis,
 * commits a later job of the same group, then relays P's row left behind.
 */
describe('the order of a group whose job is relayed late by another instance (PostgreSQL, two instances)', () => {
  const pg = useOutboxPostgres(TABLE);
  const proxy = useFaultProxy();

  it(
    "a job committed first on an instance cut off from Redis runs before its group's job committed later " +
      'on another instance, though relayed after it',
    async () => {
      muteNestLogger('error', 'warn');
      const keyPrefix = uniquePrefix('outbox-group-order');
      const topic = 'order.steps';
      const runs: RecordedRun[] = [];
      // P: behind the proxy; its own relay never looks (only Q takes rows over).
      const p = await startOutboxApp({
        redis: proxy.url,
        keyPrefix,
        outbox: pg.store(),
        outboxRelay: { minAge: 3_600_000, claimLease: 2_000 },
      });
      // Q: straight to Redis; no consumer until both jobs are in Redis, so the run order is the queue's order.
      const q = await startOutboxApp({
        redis: testRedisUrl(),
        keyPrefix,
        outbox: pg.store(),
        outboxRelay: { minAge: 300, pollInterval: 100, claimLease: 2_000 },
      });
      try {
        await p.queue.stats(topic); // P's link is up and used before it is cut
        proxy.blackhole();
        await pg.tx.run(() => p.queue.schedule(topic, 'first', { id: 'a', group: 'g' }));
        // Committed after P's transaction returned (P's write has failed or is still held): b is due after a.
        await pg.tx.run(() => q.queue.schedule(topic, 'second', { id: 'b', group: 'g' }));
        expect(await q.queue.get(topic, 'b')).not.toBeNull(); // Q wrote b right after its COMMIT
        // Q's relay takes P's row over and writes a, after b.
        await pg.noRowsOf(topic, 60_000, "Q's relay to write P's row and delete it");
        expect(q.seen.some((e) => e.name === 'outbox.relayed' && (e.event as { source: string }).source === 'relay')).toBe(true);
        expect(await q.queue.get(topic, 'a')).not.toBeNull();
        q.queue.consume(topic, (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }), { concurrency: 4 });
        await waitFor(() => runs.length >= 2 || undefined, 30_000, 'both jobs of the group to run');
        // The group's order is its due order: a was committed (and due) first.
        expect(runs.map((run) => run.id)).toEqual(['a', 'b']);
      } finally {
        proxy.heal();
        await Promise.all([p.close(), q.close()]);
      }
    },
  );
});
