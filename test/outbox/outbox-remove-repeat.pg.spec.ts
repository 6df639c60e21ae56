import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { createServer, connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { RepeatScheduler } from '../../lib/delay-queue/repeat/repeat-scheduler.js';
import type { JobOutboxStore } from '../../lib/core/outbox-port/job-outbox-store.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, holdsWithin, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { startOutboxApp, type OutboxApp } from './support/outbox-harness.js';
import { crashAfterCommit, startOutboxPostgres, type CrashedWrite, useOutboxPostgres } from './support/outbox-postgres.js';

/*
 * removeRepeat() outside a transaction, with the transactional outbox on PostgreSQL: it claims the
 * schedule's changes still pending in the outbox, deletes them once the Redis removal resolved and
 * releases them when it rejected; it waits at most 2 s for that claim, so a database that does not
 * answer does not hold the removal up. And what each instance remembers of the schedule decides
 * what it restores after Redis lost its data: a rejected removal keeps the definition, a row relayed
 * a second time keeps its definition time, the last completed change wins.
 */

jest.setTimeout(120_000);

const TABLE = 'remove_repeat_outbox';
/** A `minAge` so long that the instance's relay never takes a row left behind: the test says which instance relays. */
const NEVER_RELAYS_LEFT_BEHIND = 3_600_000;
const EVERY = 60_000;

/** A TCP proxy to Redis whose client-to-Redis traffic can be held, then released in order. */
async function startHoldingProxy(target: string) {
  const { hostname, port } = new URL(target);
  let holding = false;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => (holding ? held.push(() => upstream.write(chunk)) : upstream.write(chunk)));
    upstream.on('data', (chunk) => client.write(chunk));
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${address.port}`,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      for (const write of held.splice(0)) write();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The store, except that its DELETE of relayed rows fails: a row outlives its write, as when its process dies before the DELETE. */
function failingDeletes(store: JobOutboxStore): JobOutboxStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'delete') return async () => Promise.reject(new Error('DELETE lost (test)'));
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

failOnUnhandledRejections();

describe('removeRepeat() outside a transaction, with the outbox on PostgreSQL', () => {
  const pg = useOutboxPostgres(TABLE);
  /** Run after each test, last registered first (apps before the servers they use). */
  let cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    cleanups = [];
  });

  const rowsOf = async (topic: string) => (await pg.pool.query(`SELECT kind FROM ${TABLE} WHERE topic = $1`, [topic])).rows;
  const scheduleIds = async (app: OutboxApp, topic: string) => (await app.queue.listRepeats(topic)).map((s) => s.id);
  const relayedLeftBehind = (app: OutboxApp) =>
    app.seen.some((e) => e.name === 'outbox.relayed' && (e.event as { source: string }).source === 'relay');
  const afterCommitFailed = (app: OutboxApp) =>
    app.seen.some((e) => e.name === 'outbox.relay.failed' && (e.event as { source: string }).source === 'after-commit');

  /** An instance whose repeat checks the test runs (`checkAll`); a missing schedule is restored at its second check. */
  async function instance(redis: string, keyPrefix: string, options: { store?: JobOutboxStore; minAge?: number } = {}): Promise<OutboxApp> {
    const app = await startOutboxApp({
      redis,
      keyPrefix,
      outbox: options.store ?? pg.store(),
      outboxRelay: { minAge: options.minAge ?? 200, pollInterval: 100 },
    });
    cleanups.push(() => app.close());
    const scheduler = app.app.get(RepeatScheduler);
    scheduler.stopPeriodicChecks();
    scheduler.restoreAfterMissingMs = 0;
    return app;
  }

  async function localRedis(args: string[] = []): Promise<LocalRedisServer> {
    const server = await startLocalRedisServer({ args });
    cleanups.push(() => server.stop());
    return server;
  }

  /** A client of the test's own, to probe or flush `server`. */
  function adminOf(server: LocalRedisServer): Redis {
    const redis = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    cleanups.push(async () => redis.disconnect());
    return redis;
  }

  /** Waits until `app` answers a call through Redis again (its client may still see the server down). */
  const reachesRedis = (app: OutboxApp, topic: string) =>
    waitFor(() => app.queue.listRepeats(topic).then(() => true), 30_000, 'the instance to reach Redis again', { retryErrors: true });

  /** Waits until `app`'s calls fail: it sees Redis down. */
  const seesRedisDown = (app: OutboxApp, topic: string) =>
    waitFor(
      () =>
        app.queue.listRepeats(topic).then(
          () => false,
          () => true,
        ),
      30_000,
      'the instance to see Redis down',
    );

  /** Redis restarts empty; once every instance reaches it again, they check in `order`. */
  async function loseEverythingThenCheck(server: LocalRedisServer, topic: string, order: OutboxApp[]): Promise<void> {
    await server.restart({ signal: 'SIGKILL' });
    for (const app of new Set(order)) await reachesRedis(app, topic);
    for (const app of order) await app.app.get(RepeatScheduler).checkAll();
  }

  async function crash(target: { redisUrl: string; keyPrefix: string; topic: string }, write: CrashedWrite): Promise<void> {
    const crashed = await crashAfterCommit(pg, target, write);
    expect(crashed).toMatchObject({ signal: 'SIGKILL', output: expect.stringContaining(`COMMITTED ${write.mode} ${write.id}`) });
  }

  describe("its claim on the schedule's pending outbox rows", () => {
    it(
      'a repeat() committed on another instance whose write to Redis failed does not come back: the removal ' + 'deletes its pending row',
      async () => {
        const keyPrefix = uniquePrefix('remove-repeat-held');
        const topic = 'held.repeat';
        const proxy = await startHoldingProxy(testRedisUrl());
        cleanups.push(() => proxy.close());
        // Only A's relay takes rows left behind: B's must not apply the row around its own removal.
        const a = await instance(proxy.url, keyPrefix);
        const b = await instance(testRedisUrl(), keyPrefix, { minAge: NEVER_RELAYS_LEFT_BEHIND });
        await a.queue.listRepeats(topic); // A is connected before its link stalls

        proxy.hold();
        await pg.tx.run(() => a.queue.repeat(topic, { every: EVERY }, { id: 'r1' }));
        await waitFor(() => afterCommitFailed(a), 30_000, "A's write after COMMIT to fail on the stalled link");
        expect(await rowsOf(topic)).toEqual([{ kind: 'r' }]);

        expect(await b.queue.removeRepeat(topic, 'r1')).toBe(false); // not in Redis: only its row superseded
        await waitFor(async () => (await rowsOf(topic)).length === 0, 30_000, "the removal to delete the schedule's pending row");

        proxy.release();
        await reachesRedis(a, topic);
        // A's relay looks every 100 ms: a row left behind would be stored again within this window.
        expect(await holdsWithin(async () => (await scheduleIds(b, topic)).length > 0, 1_500)).toBe(false);
        expect(await scheduleIds(b, topic)).toEqual([]);
      },
    );

    it(
      'a removeRepeat() that rejects (Redis down) releases the pending repeat() row it claimed: the relay ' +
        'stores the schedule once Redis is back',
      async () => {
        const topic = 'rejected.repeat';
        const server = await localRedis();
        const app = await instance(server.url, uniquePrefix('remove-repeat-rejected'));
        const down = deferred();
        const restarted = server.restart({ signal: 'SIGTERM', until: down.promise });
        await seesRedisDown(app, topic);

        await pg.tx.run(() => app.queue.repeat(topic, { every: EVERY }, { id: 'x' })); // committed; its write fails
        expect(await rowsOf(topic)).toEqual([{ kind: 'r' }]);
        await expect(app.queue.removeRepeat(topic, 'x')).rejects.toThrow();
        expect(await rowsOf(topic)).toEqual([{ kind: 'r' }]);

        down.resolve();
        await restarted;
        await waitFor(async () => (await scheduleIds(app, topic)).includes('x'), 30_000, 'the relay to store the committed repeat()', {
          retryErrors: true,
        });
        await waitFor(async () => (await rowsOf(topic)).length === 0, 30_000, 'the relayed row to be deleted');
        expect(await scheduleIds(app, topic)).toEqual(['x']);
      },
    );

    it(
      'resolves without waiting for a locked outbox table (took < 10 s), and its late claim still deletes ' + "the schedule's pending row",
      async () => {
        const keyPrefix = uniquePrefix('remove-repeat-locked');
        const topic = 'locked.repeat';
        // No relay takes the row left behind: only the removal's claim can remove it.
        const app = await instance(testRedisUrl(), keyPrefix, { minAge: NEVER_RELAYS_LEFT_BEHIND });
        await app.queue.repeat(topic, { every: EVERY }, { id: 's1' });
        await crash({ redisUrl: testRedisUrl(), keyPrefix, topic }, { mode: 'repeat', id: 's1', every: EVERY });
        expect(await rowsOf(topic)).toEqual([{ kind: 'r' }]);

        const locker = await pg.pool.connect();
        try {
          await locker.query('BEGIN');
          await locker.query(`LOCK TABLE ${TABLE} IN ACCESS EXCLUSIVE MODE`);
          const started = performance.now();
          expect(await app.queue.removeRepeat(topic, 's1')).toBe(true);
          expect(performance.now() - started).toBeLessThan(10_000);
          expect(await scheduleIds(app, topic)).toEqual([]);
        } finally {
          await locker.query('ROLLBACK').catch(() => undefined);
          locker.release();
        }
        await waitFor(async () => (await rowsOf(topic)).length === 0, 30_000, 'the late claim to delete the pending row');
        expect(await scheduleIds(app, topic)).toEqual([]);
      },
    );
  });

  describe('then Redis loses its data', () => {
    const TOPIC = 'remove-repeat.loss';

    it("a rejected removeRepeat() keeps the instance's definition: it restores the schedule after a loss", async () => {
      const server = await localRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
      const app = await instance(server.url, uniquePrefix('remove-repeat-rejected-loss'));
      await app.queue.repeat(TOPIC, { every: EVERY }, { id: 'y' });
      const down = deferred();
      const restarted = server.restart({ signal: 'SIGTERM', until: down.promise });
      await seesRedisDown(app, TOPIC);
      await expect(app.queue.removeRepeat(TOPIC, 'y')).rejects.toThrow();
      down.resolve();
      await restarted;
      // The append-only file kept the schedule across the restart: the removal did not happen.
      await waitFor(async () => (await scheduleIds(app, TOPIC)).length === 1, 30_000, 'y to be read back', { retryErrors: true });

      await adminOf(server).flushall(); // the server loses its data
      const scheduler = app.app.get(RepeatScheduler);
      for (let i = 0; i < 3; i++) await scheduler.checkAll();
      expect(await scheduleIds(app, TOPIC)).toEqual(['y']);
    });

    it(
      "a removal committed by a producer killed after COMMIT, applied by another instance's relay, stays " + 'removed after a loss',
      async () => {
        const server = await localRedis();
        const keyPrefix = uniquePrefix('remove-repeat-crashed-removal');
        const definer = await instance(server.url, keyPrefix, { minAge: NEVER_RELAYS_LEFT_BEHIND });
        const relay = await instance(server.url, keyPrefix);
        await definer.queue.repeat(TOPIC, { every: EVERY }, { id: 'x' });
        await crash({ redisUrl: server.url, keyPrefix, topic: TOPIC }, { mode: 'remove', id: 'x' });
        await waitFor(
          async () => relayedLeftBehind(relay) && (await rowsOf(TOPIC)).length === 0 && (await scheduleIds(relay, TOPIC)).length === 0,
          30_000,
          'the relay instance to apply the removal and delete its row',
        );

        await loseEverythingThenCheck(server, TOPIC, [definer, definer, relay, definer, relay, definer]);
        expect(await scheduleIds(definer, TOPIC)).toEqual([]);
      },
    );

    it('a repeat() through the outbox after a direct removal on another instance wins after a loss', async () => {
      const server = await localRedis();
      const keyPrefix = uniquePrefix('remove-repeat-tx-after-removal');
      const definer = await instance(server.url, keyPrefix, { minAge: NEVER_RELAYS_LEFT_BEHIND });
      const remover = await instance(server.url, keyPrefix, { minAge: NEVER_RELAYS_LEFT_BEHIND });
      const txRepeater = await instance(server.url, keyPrefix);
      await definer.queue.repeat(TOPIC, { every: EVERY }, { id: 'x' });
      expect(await remover.queue.removeRepeat(TOPIC, 'x')).toBe(true);
      await pg.tx.run(() => txRepeater.queue.repeat(TOPIC, { every: EVERY }, { id: 'x' })); // the last change
      await waitFor(
        async () => (await rowsOf(TOPIC)).length === 0 && (await scheduleIds(definer, TOPIC)).includes('x'),
        30_000,
        'the committed repeat() to be stored and its row deleted',
      );

      await loseEverythingThenCheck(server, TOPIC, [remover, definer, definer, txRepeater, txRepeater, remover, definer, txRepeater]);
      expect(await scheduleIds(definer, TOPIC)).toEqual(['x']);
    });

    it.each(['the relay instance first', 'the remover first'] as const)(
      'a repeat() row relayed a second time (its first DELETE failed) keeps its definition time: the repeat() ' +
        'committed after a direct removal wins after a loss (%s)',
      async (first) => {
        const server = await localRedis();
        const keyPrefix = uniquePrefix('remove-repeat-reapplied');
        const remover = await instance(server.url, keyPrefix, { minAge: NEVER_RELAYS_LEFT_BEHIND });
        const writer = await instance(server.url, keyPrefix, { store: failingDeletes(pg.store()), minAge: NEVER_RELAYS_LEFT_BEHIND });
        await remover.queue.repeat(TOPIC, { every: EVERY }, { id: 'x' });
        expect(await remover.queue.removeRepeat(TOPIC, 'x')).toBe(true); // the remover remembers its removal
        await pg.tx.run(() => writer.queue.repeat(TOPIC, { every: EVERY }, { id: 'x' })); // the last change
        // Written to Redis after COMMIT, then its DELETE failed: the row stays in the outbox.
        await waitFor(() => afterCommitFailed(writer), 30_000, "the writer's DELETE after its write to fail");
        expect(await scheduleIds(remover, TOPIC)).toEqual(['x']);
        expect(await rowsOf(TOPIC)).toEqual([{ kind: 'r' }]);
        await writer.close();

        const relay = await instance(server.url, keyPrefix);
        await waitFor(
          async () => relayedLeftBehind(relay) && (await rowsOf(TOPIC)).length === 0,
          30_000,
          'the relay instance to apply the row again and delete it',
        );

        const order =
          first === 'the relay instance first'
            ? [relay, relay, remover, relay, remover, relay]
            : [remover, relay, relay, remover, relay, remover];
        await loseEverythingThenCheck(server, TOPIC, order);
        expect(await scheduleIds(relay, TOPIC)).toEqual(['x']);
      },
    );
  });
});

describe('removeRepeat() outside a transaction while the outbox database is stopped', () => {
  it('removes the schedule at once (took < 10 s) and only logs that its pending outbox changes were not superseded', async () => {
    const topic = 'db-down.repeat';
    const pg = await startOutboxPostgres('remove_repeat_db_down');
    pg.pool.on('error', () => undefined); // idle clients of the pool are terminated with the server
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const app = await startOutboxApp({ redis: testRedisUrl(), keyPrefix: uniquePrefix('remove-repeat-db-down'), outbox: pg.store() });
    try {
      await app.queue.repeat(topic, { every: EVERY }, { id: 'z' });
      await pg.server.stop();
      const started = performance.now();
      expect(await app.queue.removeRepeat(topic, 'z')).toBe(true);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(await app.queue.listRepeats(topic)).toEqual([]);
      await waitFor(
        () => warn.mock.calls.some(([message]) => String(message).includes('were not superseded')),
        30_000,
        'the failed claim to be logged',
      );
    } finally {
      await app.close();
      warn.mockRestore();
      await pg.stop().catch(() => undefined);
    }
  });
});
