import type { Client } from 'pg';
import { reportedBy, spawnFixture } from '../support/child-process.js';
import { connectPostgres, startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor, within } from '../support/timing.js';
import { FENCE_TABLES_SQL, fenceViolations, fencedRowWrite } from '../fixtures/job-fence-store.js';
import { createDelayApp, useClosedAfterEach, type DelayTestApp } from './support/delay-test-app.js';

type Fixture = ReturnType<typeof spawnFixture>;

async function stopChild(child: Fixture): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(kill);
}

/*
 * The fault fencing exists for: a consumer paused (GC, VM freeze, SIGSTOP) past its visibility
 * timeout, whose job another consumer takes over. When the paused one resumes it still finishes its
 * handler and writes, before it can learn that the job is no longer its own; the row's fence
 * (`UPDATE … WHERE fence < $token`, PostgreSQL) rejects that late write, and the takeover's stands.
 */
describe('a consumer paused past its visibility timeout writes after another consumer took its job over', () => {
  let postgres: LocalPostgres;
  let db: Client;
  let app: DelayTestApp;
  const children: Fixture[] = [];
  const { consumers } = useClosedAfterEach();

  beforeAll(async () => {
    postgres = await startLocalPostgres();
    db = await connectPostgres(postgres);
    await db.query(FENCE_TABLES_SQL);
  }, 60_000);
  afterEach(async () => {
    await Promise.all(children.splice(0).map(stopChild));
    await app?.close();
  });
  afterAll(async () => {
    await db?.end();
    await postgres?.stop();
  });

  it('the paused consumer’s late write is rejected by the fenced row (0 rows); the takeover’s write stands', async () => {
    const keyPrefix = uniquePrefix('jfp');
    const topic = 'order.fulfil';
    await db.query(`INSERT INTO fenced_rows (id) VALUES ('order-1')`);
    app = await createDelayApp({ keyPrefix });

    const paused = spawnFixture('job-fence-consumer.ts', [testRedisUrl(), keyPrefix, topic, '1000', postgres.url, 'paused']);
    children.push(paused);
    await waitFor(() => /^ready /m.test(paused.output()), 30_000, `the consumer process to start:\n${paused.output()}`);

    const id = await app.queue.schedule(topic, { row: 'order-1' }, { id: 'fulfil-order-1' });
    const stale = await reportedBy<{ id: string; attempt: number; token: string }>(paused, 'start');
    paused.kill('SIGSTOP'); // it runs no code now: no visibility extension, no write
    expect(stale).toMatchObject({ id, attempt: 1 });

    // Another consumer gets the job once the paused one's visibility (1 s) has passed, and writes at once.
    const takeovers: Array<{ attempt: number; token: string; accepted: boolean }> = [];
    consumers.push(
      app.queue.consume<{ row: string }>(topic, async (payload, job) => {
        const accepted = await fencedRowWrite(db, payload.row, 'takeover', 'written by takeover', job.fencingToken);
        takeovers.push({ attempt: job.attempt, token: job.fencingToken, accepted });
      }),
    );
    await waitFor(() => takeovers.length > 0, 20_000, 'the takeover to run the job');
    await waitFor(async () => (await app.queue.get(topic, id)) === null, 10_000, 'the takeover to be acknowledged');
    expect(takeovers).toEqual([{ attempt: 2, token: expect.any(String), accepted: true }]);
    expect(BigInt(takeovers[0]!.token)).toBeGreaterThan(BigInt(stale.token));

    // The paused consumer resumes and finishes its handler at once: its write comes late.
    paused.kill('SIGCONT');
    paused.kill('SIGUSR2');
    type Wrote = { id: string; attempt: number; token: string; accepted: boolean; abortedBeforeWrite: boolean; reason?: string };
    const late = await reportedBy<Wrote>(paused, 'wrote');
    expect(late).toMatchObject({ id, attempt: 1, token: stale.token, accepted: false });

    // The checker over every recorded write: accepted tokens only grow per row, nothing above the fence was refused.
    const { writes, violations } = await fenceViolations(db);
    expect(violations).toEqual([]);
    expect(writes.map(({ writer, token, accepted }) => ({ writer, token: token.toString(), accepted }))).toEqual([
      { writer: 'takeover', token: takeovers[0]!.token, accepted: true },
      { writer: 'paused', token: stale.token, accepted: false },
    ]);
    const row = await db.query<{ value: string; fence: string }>(`SELECT value, fence FROM fenced_rows WHERE id = 'order-1'`);
    expect(row.rows).toEqual([{ value: 'written by takeover', fence: takeovers[0]!.token }]);

    // The paused consumer's acknowledgement is refused without bringing the job back: it ran twice, once per claim, and is done.
    expect(await holdsWithin(async () => takeovers.length > 1 || (await app.queue.get(topic, id)) !== null, 2_000)).toBe(false);
    expect(await app.queue.stats(topic)).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
    expect(paused.output()).not.toMatch(/^unhandled /m);
    await within(stopChild(paused), 20_000, 'the paused consumer to close');
    expect(paused.output()).toMatch(/^closed /m);
  });
});
