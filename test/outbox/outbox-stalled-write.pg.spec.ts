import { jest } from '@jest/globals';
import { Redis } from 'ioredis';
import type { CommandObserver } from '../../tools/fault-proxy.js';
import { useFaultProxy } from '../support/use-fault-proxy.js';
import type { PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { startOutboxApp, type OutboxApp, type RecordedRun } from './support/outbox-harness.js';
import { useOutboxPostgres } from './support/outbox-postgres.js';

jest.setTimeout(180_000);
afterEach(() => jest.restoreAllMocks());

const TABLE = 'stalled_outbox';
/** Short, so that the other instance's relay takes the rows over within seconds. */
const CLAIM_LEASE_MS = 2_000;

failOnUnhandledRejections();

/**
 * Instances A and B share one PostgreSQL outbox. A reaches Redis through a loopback proxy whose link
 * stalls (bytes held, not dropped) while A writes what it just committed; B relays the rows once A's
 * row claim has passed its claim deadline; then the link heals and A's held bytes reach Redis late.
 */
describe('an after-commit write held up by a stalled Redis link that heals (PostgreSQL, two instances)', () => {
  const pg = useOutboxPostgres(TABLE);
  const proxy = useFaultProxy();

  /**
   * A behind the proxy (its relay never looks: only B takes rows over); B straight to Redis, consuming
   * `topic`. A's client is the application's own ioredis client with its defaults (`{ client }`): no
   * socket timeout, so a silent link stays open and its held bytes are delivered when it heals (a
   * connection dropped for silence would lose them in this proxy; on a real network bytes already on
   * their way still arrive before the reset).
   */
  async function startPair(keyPrefix: string, topic: string, runs: RecordedRun[]): Promise<{ a: OutboxApp; b: OutboxApp }> {
    const client = new Redis(proxy.url, { lazyConnect: true });
    const started = await startOutboxApp({
      redis: { client },
      keyPrefix,
      outbox: pg.store(),
      outboxRelay: { minAge: 3_600_000, claimLease: CLAIM_LEASE_MS },
    });
    const a = { ...started, close: () => started.close().finally(() => client.disconnect()) };
    const b = await startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix,
      outbox: pg.store(),
      topics: [topic],
      runs,
      outboxRelay: { minAge: 300, pollInterval: 100, claimLease: CLAIM_LEASE_MS },
    });
    // A's link is up and used before it stalls.
    await a.queue.stats(topic);
    return { a, b };
  }

  /**
   * Stalls the proxy's link, commits `write` through the outbox, and waits until the stalled instance
   * sent its write into the stall (`what`); returns the observer of the commands sent, to stop once healed.
   */
  async function commitIntoStall(write: () => Promise<unknown>, what: string): Promise<CommandObserver> {
    proxy.blackhole();
    const sent = proxy.observe(() => true);
    await pg.tx.run(write);
    await waitFor(() => sent.count > 0 || undefined, 30_000, what);
    return sent;
  }

  /** A's own after-commit outcome: its write answered (written, refused or expired). */
  const afterCommitOutcomes = (app: OutboxApp) =>
    app.seen.filter(
      (e) => (e.name === 'outbox.relayed' || e.name === 'outbox.relay.failed') && (e.event as { source: string }).source === 'after-commit',
    );

  it(
    "a job committed by A runs once: B relays it after A's row claim ends, it runs and is acknowledged, " +
      "then A's held write lands and changes nothing",
    async () => {
      muteNestLogger('error', 'warn');
      const keyPrefix = uniquePrefix('outbox-stall-job');
      const topic = 'order.expire';
      const runs: RecordedRun[] = [];
      const { a, b } = await startPair(keyPrefix, topic, runs);
      try {
        // The fault fires: A sends its write into the stalled link, and it stays unanswered.
        const sent = await commitIntoStall(
          () => a.queue.schedule(topic, { order: 1 }, { id: 'once' }),
          "A's write to be sent into the stall",
        );
        // B's relay takes the row over after A's row claim ends; the job runs and is acknowledged; the row is deleted.
        await waitFor(() => runs.length === 1 || undefined, 60_000, "B's relay to deliver the job");
        await pg.noRowsOf(topic, 30_000, 'B to delete the row');
        await waitFor(async () => ((await b.queue.get(topic, 'once')) === null ? true : undefined), 30_000, 'the job to be acknowledged');
        expect(b.seen.some((e) => e.name === 'outbox.relayed' && (e.event as { source: string }).source === 'relay')).toBe(true);
        expect(afterCommitOutcomes(a)).toEqual([]);
        expect(a.queue.outboxStats?.inFlight).toBe(1);
        // The stall heals: A's held bytes reach Redis late.
        proxy.heal();
        sent.stop();
        await waitFor(() => a.queue.outboxStats?.inFlight === 0 || undefined, 60_000, "A's late write to be answered");
        expect(afterCommitOutcomes(a).length).toBeGreaterThan(0);
        expect(await holdsWithin(() => runs.length > 1, 3_000)).toBe(false);
        expect(runs.map((run) => run.id)).toEqual(['once']);
        expect(await b.queue.get(topic, 'once')).toBeNull();
      } finally {
        proxy.heal();
        await Promise.all([a.close(), b.close()]);
      }
    },
  );

  it(
    'the after-commit claim leaves a row another relay holds under a live claim: the job runs once when ' + "that relay's held write lands",
    async () => {
      muteNestLogger('error', 'warn');
      const keyPrefix = uniquePrefix('outbox-stall-claim');
      const topic = 'order.claimed';
      const runs: RecordedRun[] = [];
      // A: direct to Redis, consumes; its after-commit claim waits until B's relay has claimed the row
      // (a slow after-commit hook: a paused process, a slow connection to the database).
      const real = pg.store();
      const claimedByB = async () =>
        (await pg.pool.query(`SELECT 1 FROM ${TABLE} WHERE topic = $1 AND claimed_until IS NOT NULL`, [topic])).rows.length > 0;
      const late = Object.assign(Object.create(real) as PostgresJobOutbox, {
        claimRows: async (ids: readonly string[], options: { claimMs: number }) => {
          await waitFor(claimedByB, 30_000, "B's relay to claim the row");
          return real.claimRows(ids, options);
        },
      });
      const a = await startOutboxApp({
        redis: testRedisUrl(),
        keyPrefix,
        outbox: late,
        topics: [topic],
        runs,
        outboxRelay: { minAge: 3_600_000, claimLease: CLAIM_LEASE_MS },
      });
      // B: behind the stalled proxy (its own client, as in startPair), its relay takes rows over quickly.
      const client = new Redis(proxy.url, { lazyConnect: true });
      const b = await startOutboxApp({
        redis: { client },
        keyPrefix,
        outbox: pg.store(),
        outboxRelay: { minAge: 300, pollInterval: 100, claimLease: CLAIM_LEASE_MS },
      });
      try {
        await b.queue.stats(topic);
        // B claims the row and sends its write into the stall; A's after-commit settles meanwhile.
        const sent = await commitIntoStall(
          () => a.queue.schedule(topic, { order: 2 }, { id: 'claimed-once' }),
          "B's write to be sent into the stall",
        );
        await waitFor(() => a.queue.outboxStats?.inFlight === 0 || undefined, 30_000, "A's after-commit write to settle");
        // A either left the row to B, or wrote the job itself: then it has run and been acknowledged.
        await waitFor(
          async () => (runs.length > 0 ? (await a.queue.get(topic, 'claimed-once')) === null : (await pg.rowsOf(topic)).length === 1),
          30_000,
          "A's outcome: the row left to B, or the job written by A run and acknowledged",
        );
        proxy.heal();
        sent.stop();
        await pg.noRowsOf(topic, 60_000, 'the row to be relayed and deleted');
        await waitFor(() => runs.length > 0 || undefined, 60_000, 'the job to run');
        expect(await holdsWithin(() => runs.length > 1, 3_000)).toBe(false);
        expect(runs.map((run) => run.id)).toEqual(['claimed-once']);
      } finally {
        proxy.heal();
        await Promise.all([a.close(), b.close().finally(() => client.disconnect())]);
      }
    },
  );

  it(
    "a schedule stays removed: A commits repeat(), B applies it after A's row claim ends, a later removeRepeat() " +
      "commits, then A's held application lands and changes nothing",
    async () => {
      muteNestLogger('error', 'warn');
      const keyPrefix = uniquePrefix('outbox-stall-repeat');
      const topic = 'report.hourly';
      const runs: RecordedRun[] = [];
      const { a, b } = await startPair(keyPrefix, topic, runs);
      try {
        const sent = await commitIntoStall(
          () => a.queue.repeat(topic, { every: 60_000 }, { id: 'hourly' }),
          "A's schedule change to be sent into the stall",
        );
        // B's relay applies the 'repeat' row after A's row claim ends and deletes it.
        await waitFor(
          async () => ((await b.queue.listRepeats(topic)).some((s) => s.id === 'hourly') ? true : undefined),
          60_000,
          "B's relay to store the schedule",
        );
        await pg.noRowsOf(topic, 30_000, 'B to delete the row');
        // A removal committed later, applied at once by B ('x' row).
        await pg.tx.run(() => b.queue.removeRepeat(topic, 'hourly'));
        await pg.noRowsOf(topic, 30_000, "the removal's row to be applied and deleted");
        expect(await b.queue.listRepeats(topic)).toEqual([]);
        expect(afterCommitOutcomes(a)).toEqual([]);
        expect(a.queue.outboxStats?.inFlight).toBe(1);
        proxy.heal();
        sent.stop();
        await waitFor(() => a.queue.outboxStats?.inFlight === 0 || undefined, 60_000, "A's late application to be answered");
        expect(afterCommitOutcomes(a).length).toBeGreaterThan(0);
        expect(await holdsWithin(async () => (await b.queue.listRepeats(topic)).length > 0, 3_000)).toBe(false);
      } finally {
        proxy.heal();
        await Promise.all([a.close(), b.close()]);
      }
    },
  );
});
