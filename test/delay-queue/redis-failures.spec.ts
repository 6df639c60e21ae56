import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { startFreezingProxy } from './support/freezing-proxy.js';
import { blockedClients } from '../support/redis-probes.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { sleep, waitFor } from '../support/timing.js';

describe('Consumers survive Redis failures', () => {
  describe('Redis restarted while consumers block (append-only file on)', () => {
    let server: LocalRedisServer;
    let t: DelayTestApp;
    beforeAll(async () => {
      server = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
      t = await createDelayApp({ redis: server.url });
    });
    afterAll(async () => {
      await t.close();
      await server.stop();
    });

    it('still runs a job that was waiting when Redis went down, at its time', async () => {
      // A job's lateness less the time this process could run nothing meanwhile (a loaded CI host).
      const stalls = watchEventLoopStalls();
      const runs: Array<{ id: string; lateness: number; ownDelay: number }> = [];
      const consumer = t.queue.consume('restart.persisted', (_payload, job) => {
        const now = Date.now();
        const due = job.scheduledAt.getTime();
        runs.push({ id: job.id, lateness: now - due, ownDelay: now - due - stalls.within(due, now) });
      });
      const id = await t.queue.schedule('restart.persisted', 1, { delay: 2_000 });
      await waitFor(async () => (await blockedClients(server.url)) >= 1, 10_000, 'the consumer to block until the job is due', {
        every: 50,
      });
      await server.restart({ signal: 'SIGKILL', downtimeMs: 500 });
      await waitFor(() => runs.length === 1, 8_000, 'the job to run after the restart');
      stalls.stop();
      expect(runs[0].id).toBe(id);
      expect(runs[0].lateness).toBeGreaterThanOrEqual(0);
      expect(runs[0].ownDelay).toBeLessThan(2_500);
      await consumer.close();
    });

    it('runs a job scheduled after the restart at its time, without waiting for another job', async () => {
      const stalls = watchEventLoopStalls();
      const runs: Array<{ lateness: number; ownDelay: number }> = [];
      const consumer = t.queue.consume('restart.idle', (_payload, job) => {
        const now = Date.now();
        const due = job.scheduledAt.getTime();
        runs.push({ lateness: now - due, ownDelay: now - due - stalls.within(due, now) });
      });
      await waitFor(async () => (await blockedClients(server.url)) >= 1, 10_000, 'the consumer to block on the empty topic', { every: 50 });
      await server.restart({ signal: 'SIGKILL', downtimeMs: 500 });
      await waitFor(
        async () => {
          try {
            return (await t.queue.stats('restart.idle')).scheduled === 0;
          } catch {
            return false;
          }
        },
        10_000,
        'Redis to answer again',
      );
      await t.queue.schedule('restart.idle', 1, { delay: 1_000 });
      await waitFor(() => runs.length === 1, 6_000, 'the job to run');
      stalls.stop();
      expect(runs[0].lateness).toBeGreaterThanOrEqual(0);
      expect(runs[0].ownDelay).toBeLessThan(2_500);
      await consumer.close();
    });
  });

  it('replaces a blocking connection that hangs without closing, and runs the job it would have missed', async () => {
    const proxy = await startFreezingProxy(testRedisUrl());
    const keyPrefix = uniquePrefix('dq');
    const consumerApp = await createDelayApp({ redis: proxy.url, keyPrefix });
    const producer = await createDelayApp({ keyPrefix });
    try {
      const ran: string[] = [];
      const consumer = consumerApp.queue.consume(
        'hang',
        (_payload, job) => {
          ran.push(job.id);
        },
        { maxIdleWait: 1_000 },
      ) as unknown as { blockingConnectionsOpened: number; close(): Promise<void> };
      await sleep(200);
      proxy.freezeNextBlockingConnection();
      await waitFor(() => proxy.frozen === 1, 5_000, 'a blocking connection to be frozen');
      const opened = consumer.blockingConnectionsOpened;

      // Its marker never reaches the frozen consumer, and the consumer knows of no due time to wake for.
      const id = await producer.queue.schedule('hang', 1);
      const scheduledAt = performance.now();
      await waitFor(() => ran.length === 1, 10_000, 'the job to run');
      expect(ran).toEqual([id]);
      expect(performance.now() - scheduledAt).toBeLessThan(6_000); // maxIdleWait + hang grace, generously
      // Only the hang timer can have woken the loop (the frozen connection brings neither the marker nor
      // a timeout). The replacement is opened when the loop next parks on the marker: with concurrency 1
      // that is after the job's handler returned and one more claim, so it is waited for, not read at once.
      await waitFor(() => consumer.blockingConnectionsOpened > opened, 5_000, 'a new blocking connection to replace the hung one');
      await consumer.close();
    } finally {
      await consumerApp.close();
      await producer.close();
      await proxy.close();
    }
  });
});
