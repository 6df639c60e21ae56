import { AsyncLocalStorage } from 'node:async_hooks';
import { readdirSync } from 'node:fs';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { join } from 'node:path';
import {
  JobRateLimitedError,
  LockAcquireTimeoutError,
  UnrecoverableJobError,
  runInTransaction,
  type Consumer,
  type DelayQueueService,
  type LockHandle,
  type LockService,
  type RedisLockModuleOptions,
} from '../../lib/index.js';
import { inPgTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { writeOutboxJobScript } from '../../lib/delay-queue/scripts/write-outbox-job.lua.js';
import { ackJobsScript } from '../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { cancelJobScript } from '../../lib/delay-queue/scripts/cancel-job.lua.js';
import { cancelWaitingJobScript } from '../../lib/delay-queue/scripts/cancel-waiting-job.lua.js';
import { pauseTopicScript } from '../../lib/delay-queue/scripts/pause-topic.lua.js';
import { postponeRateLimitedJobScript } from '../../lib/delay-queue/scripts/postpone-rate-limited-job.lua.js';
import { blockTopicScript } from '../../lib/delay-queue/scripts/block-topic.lua.js';
import { shardTopicName } from '../../lib/core/keys/topic-name.js';
import { setGroupLimitScript } from '../../lib/delay-queue/scripts/set-group-limit.lua.js';
import { releaseGroupTurnScript } from '../../lib/delay-queue/scripts/release-group-turn.lua.js';
import { deleteDeadJobScript } from '../../lib/delay-queue/scripts/delete-dead-job.lua.js';
import { listJobsScript } from '../../lib/delay-queue/scripts/list-jobs.lua.js';
import { readLockScript } from '../../lib/lock/kinds/mutex/read-lock.lua.js';
import { readSemaphoreScript } from '../../lib/lock/kinds/semaphore/read-semaphore.lua.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { extendJobsScript } from '../../lib/delay-queue/scripts/extend-jobs.lua.js';
import { failJobScript } from '../../lib/delay-queue/scripts/fail-job.lua.js';
import { releaseJobsScript } from '../../lib/delay-queue/scripts/release-jobs.lua.js';
import { rescheduleJobScript } from '../../lib/delay-queue/scripts/reschedule-job.lua.js';
import { updatePayloadScript } from '../../lib/delay-queue/scripts/update-payload.lua.js';
import { drainWaitingJobsScript } from '../../lib/delay-queue/scripts/drain-waiting-jobs.lua.js';
import { cleanFinishedJobsScript } from '../../lib/delay-queue/scripts/clean-finished-jobs.lua.js';
import { retryDeadJobsScript } from '../../lib/delay-queue/scripts/retry-dead-jobs.lua.js';
import { scheduleJobsScript } from '../../lib/delay-queue/scripts/schedule-jobs.lua.js';
import { setProgressScript } from '../../lib/delay-queue/scripts/set-progress.lua.js';
import { appendJobLogsScript } from '../../lib/delay-queue/scripts/append-job-logs.lua.js';
import { acquireFairLockScript } from '../../lib/lock/kinds/fair/acquire-fair-lock.lua.js';
import { acquireLockScript } from '../../lib/lock/kinds/mutex/acquire-lock.lua.js';
import { leaveFairQueueScript } from '../../lib/lock/kinds/fair/leave-fair-queue.lua.js';
import { acquireReadLockScript } from '../../lib/lock/kinds/read-write/acquire-read-lock.lua.js';
import { acquireWriteLockScript } from '../../lib/lock/kinds/read-write/acquire-write-lock.lua.js';
import { leaveReadWriteWritersScript } from '../../lib/lock/kinds/read-write/leave-read-write-writers.lua.js';
import { releaseReadWriteLockScript } from '../../lib/lock/kinds/read-write/release-read-write-lock.lua.js';
import { renewReadWriteLocksScript } from '../../lib/lock/kinds/read-write/renew-read-write-locks.lua.js';
import { releaseLockScript } from '../../lib/lock/kinds/mutex/release-lock.lua.js';
import { renewLocksScript } from '../../lib/lock/kinds/mutex/renew-locks.lua.js';
import { acquirePermitScript } from '../../lib/lock/kinds/semaphore/acquire-permit.lua.js';
import { releasePermitScript } from '../../lib/lock/kinds/semaphore/release-permit.lua.js';
import { renewPermitsScript } from '../../lib/lock/kinds/semaphore/renew-permits.lua.js';
import { readDeadLettersScript } from '../../lib/delay-queue/scripts/read-dead-letters.lua.js';
import { readJobScript } from '../../lib/delay-queue/scripts/read-job.lua.js';
import { watchJobScript } from '../../lib/delay-queue/scripts/watch-job.lua.js';
import { topicStatsScript } from '../../lib/delay-queue/scripts/topic-stats.lua.js';
import { advanceRepeatScript } from '../../lib/delay-queue/scripts/advance-repeat.lua.js';
import { readRepeatsScript } from '../../lib/delay-queue/scripts/read-repeats.lua.js';
import { removeRepeatScript } from '../../lib/delay-queue/scripts/remove-repeat.lua.js';
import { reassertRemovalsScript } from '../../lib/delay-queue/scripts/reassert-removals.lua.js';
import { upsertRepeatScript } from '../../lib/delay-queue/scripts/upsert-repeat.lua.js';
import { operationKey } from '../../lib/delay-queue/jobs/operation-record.js';
import type { JobScript, ScriptArgType } from '../../lib/delay-queue/scripts/job-script.js';
import { RedisScript } from '../../lib/core/redis/redis-script.js';
import { fence, LostReplyHarness, row, type LostReplyContext, type LostReplyRow, type ScriptRef } from '../support/lost-reply-harness.js';
import { got } from '../support/lock-probes.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

/*
 * The lost-reply fault, over every script-backed operation. Each row loses the reply of one call
 * after Redis ran it; ioredis re-sends the call when it reconnects, so the script runs twice (the
 * harness proves both: the fault fired on a real run, and the call reached Redis again). Then the
 * row checks from outside, with a plain Redis client and through the API of a second module on a
 * direct connection (another process), that:
 *   locks: no two holders; re-entry counts balance (the owner hash holds exactly the expected
 *          count, and once the outer section ends another process takes the lock at once);
 *          fences only grow;
 *   jobs:  each job runs exactly once here (at-least-once is not an excuse for a fault this small),
 *          never before it is due, and nothing is lost or dead-lettered without a run; return values
 *          of the API tell the truth.
 */

type Ctx = LostReplyContext;
const TOPIC = 'jobs';

/** The job is gone and the topic holds nothing (seen from the peer instance). */
async function expectGoneFromTopic(ctx: { peerQueue: DelayQueueService }, id: string): Promise<void> {
  expect(await ctx.peerQueue.get(TOPIC, id)).toBeNull();
  expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
}

/** The fence of a hold another process takes at once (it must be free), given back right away; null if it was not free. */
async function takenAtOnce(attempt: Promise<LockHandle | null>): Promise<bigint | null> {
  const handle = await attempt;
  if (!handle) return null;
  await handle.release();
  return fence(handle.fencingToken);
}

/** An owner's field in a lock's hash: `<clientId>:<n>`, with `:r` / `:w` for a read/write holder. */
const OWNER_FIELD = /^[0-9a-f]{12}:\d+(:[rw])?$/;

/** Re-entry counts of the owners in a lock's hash (other fields, such as 'mode' or per-hold records, left out). */
async function counts(ctx: Omit<Ctx, 'lost'>, name: string): Promise<string[]> {
  const hash = await ctx.redis.hgetall(ctx.keys.lock(name).owners);
  return Object.entries(hash)
    .filter(([field]) => OWNER_FIELD.test(field))
    .map(([, count]) => count);
}

/** One kind of lock, as the rows that apply to every kind see it. */
interface Kind {
  readonly label: string;
  readonly acquireScript: ScriptRef;
  readonly releaseScript: ScriptRef;
  take(locks: LockService, name: string): Promise<LockHandle>;
  /** A try by another process that this kind's hold must exclude. */
  tryExcluded(locks: LockService, name: string): Promise<LockHandle | null>;
  /** The most exclusive try: succeeds only when nobody holds the lock at all. */
  tryExclusive(locks: LockService, name: string): Promise<LockHandle | null>;
}

const KINDS: readonly Kind[] = [
  {
    label: 'plain lock',
    acquireScript: acquireLockScript,
    releaseScript: releaseLockScript,
    take: (locks, name) => locks.acquire(name),
    tryExcluded: (locks, name) => locks.tryAcquire(name),
    tryExclusive: (locks, name) => locks.tryAcquire(name),
  },
  {
    label: 'fair lock',
    acquireScript: acquireFairLockScript,
    releaseScript: releaseLockScript,
    take: (locks, name) => locks.acquire(name, { fair: true }),
    tryExcluded: (locks, name) => locks.tryAcquire(name, { fair: true }),
    tryExclusive: (locks, name) => locks.tryAcquire(name, { fair: true }),
  },
  {
    label: 'read lock',
    acquireScript: acquireReadLockScript,
    releaseScript: releaseReadWriteLockScript,
    take: (locks, name) => locks.readWrite(name).read(),
    tryExcluded: (locks, name) => locks.readWrite(name).tryWrite(),
    tryExclusive: (locks, name) => locks.readWrite(name).tryWrite(),
  },
  {
    label: 'write lock',
    acquireScript: acquireWriteLockScript,
    releaseScript: releaseReadWriteLockScript,
    take: (locks, name) => locks.readWrite(name).write(),
    tryExcluded: (locks, name) => locks.readWrite(name).tryRead(),
    tryExclusive: (locks, name) => locks.readWrite(name).tryWrite(),
  },
];

/** The four rows every kind gets: fresh acquire, nested acquire, nested release, outer release. */
function kindRows(kind: Kind): LostReplyRow[] {
  const name = 'resource';
  /** After the last release: nothing left in Redis, and another process takes the lock at once with a larger fence. */
  const expectFreeAfter = async (ctx: Ctx, seen: readonly string[]) => {
    expect(await ctx.redis.exists(ctx.keys.lock(name).owners)).toBe(0);
    const next = await takenAtOnce(kind.tryExclusive(ctx.peerLocks, name));
    expect(next).not.toBeNull();
    for (const token of seen) expect(next!).toBeGreaterThan(fence(token));
  };
  return [
    row({
      name: `${kind.label} acquire: a fresh acquire run twice is one hold, excludes others, and one release frees it`,
      script: kind.acquireScript,
      arrange: (ctx) => takenAtOnce(kind.tryExclusive(ctx.peerLocks, name)),
      act: (ctx) => kind.take(ctx.locks, name),
      check: async (ctx, earlier, handle) => {
        expect(fence(handle.fencingToken)).toBeGreaterThan(earlier!);
        expect(await counts(ctx, name)).toEqual(['1']);
        expect(await got(kind.tryExcluded(ctx.peerLocks, name))).toBe(false);
        await handle.release();
        await expectFreeAfter(ctx, [handle.fencingToken]);
      },
    }),
    row({
      name: `${kind.label} re-entry: a nested acquire run twice counts once; the lock is free as soon as the outer section ends`,
      script: kind.acquireScript,
      arrange: (ctx) => kind.take(ctx.locks, name),
      act: (ctx, outer) =>
        ctx.locks.runInScope(outer, async () => {
          const inner = await kind.take(ctx.locks, name);
          const nested = { token: inner.fencingToken, counts: await counts(ctx, name) };
          await inner.release();
          return { nested, afterInner: { counts: await counts(ctx, name), other: await got(kind.tryExcluded(ctx.peerLocks, name)) } };
        }),
      check: async (ctx, outer, result) => {
        expect(result).toEqual({
          nested: { token: outer.fencingToken, counts: ['2'] },
          afterInner: { counts: ['1'], other: false },
        });
        await outer.release();
        await expectFreeAfter(ctx, [outer.fencingToken]);
      },
    }),
    row({
      name: `${kind.label} nested release: run twice, it ends only the nested hold; the outer section keeps the lock`,
      script: kind.releaseScript,
      arrange: (ctx) => kind.take(ctx.locks, name),
      act: (ctx, outer) =>
        ctx.locks.runInScope(outer, async () => {
          const inner = await kind.take(ctx.locks, name);
          await inner.release();
          return { counts: await counts(ctx, name), other: await got(kind.tryExcluded(ctx.peerLocks, name)), outerHeld: outer.held };
        }),
      check: async (ctx, outer, result) => {
        expect(result).toEqual({ counts: ['1'], other: false, outerHeld: true });
        await outer.release();
        await expectFreeAfter(ctx, [outer.fencingToken]);
      },
    }),
    row({
      name: `${kind.label} release: run twice, it frees the lock once and another process takes it at once`,
      script: kind.releaseScript,
      arrange: (ctx) => kind.take(ctx.locks, name),
      act: (_ctx, handle) => handle.release(),
      check: async (ctx, handle) => {
        expect(handle.held).toBe(false);
        await expectFreeAfter(ctx, [handle.fencingToken]);
      },
    }),
  ];
}

const lockRows: LostReplyRow[] = [
  ...KINDS.flatMap(kindRows),
  row({
    name: 'plain lock extend: run twice, the lease is extended and the hold stays single',
    script: renewLocksScript,
    arrange: (ctx) => ctx.locks.acquire('extended', { leaseTime: 1_500 }),
    act: (_ctx, handle) => handle.extend(20_000),
    check: async (ctx, handle) => {
      expect(handle.held).toBe(true);
      expect(await ctx.redis.pttl(ctx.keys.lock('extended').owners)).toBeGreaterThan(10_000);
      expect(await counts(ctx, 'extended')).toEqual(['1']);
      await handle.release();
      expect(await takenAtOnce(ctx.peerLocks.tryAcquire('extended'))).toBeGreaterThan(fence(handle.fencingToken));
    },
  }),
  row({
    name: 'watchdog renewal: a renewal run twice keeps the hold alive past several leases, and one release frees it',
    script: renewLocksScript,
    // 1.5 s (renewed every 500 ms): a renewal, including the re-sent one, survives the event-loop
    // stalls of a loaded machine; a lease that ran out during one would rightly be lost.
    options: { lock: { leaseTime: 1_500 } },
    arrange: (ctx) => ctx.locks.acquire('watched'),
    act: async (ctx, handle) => {
      await ctx.lost;
      // Three leases more: only renewals that keep working keep it.
      await sleep(4_600);
      return { held: handle.held, aborted: handle.signal.aborted, other: await got(ctx.peerLocks.tryAcquire('watched')) };
    },
    check: async (ctx, handle, during) => {
      expect(during).toEqual({ held: true, aborted: false, other: false });
      expect(await counts(ctx, 'watched')).toEqual(['1']);
      await handle.release();
      expect(await takenAtOnce(ctx.peerLocks.tryAcquire('watched'))).toBeGreaterThan(fence(handle.fencingToken));
    },
  }),
  row({
    name: 'fair enqueue: a waiter whose queueing try runs twice is queued once, gets the lock, and leaves no trace in the queue',
    script: acquireFairLockScript,
    arrange: (ctx) => ctx.peerLocks.acquire('fair', { fair: true }),
    act: async (ctx, holder) => {
      const waiting = ctx.locks.acquire('fair', { fair: true, waitTimeout: 8_000 });
      await ctx.lost;
      await holder.release();
      return waiting;
    },
    check: async (ctx, holder, handle) => {
      const keys = ctx.keys.lock('fair');
      expect(fence(handle.fencingToken)).toBeGreaterThan(fence(holder.fencingToken));
      expect({ queue: await ctx.redis.lrange(keys.queue, 0, -1), timeouts: await ctx.redis.zrange(keys.timeouts, '0', '-1') }).toEqual({
        queue: [],
        timeouts: [],
      });
      expect(await counts(ctx, 'fair')).toEqual(['1']);
      await handle.release();
      expect(await takenAtOnce(ctx.peerLocks.tryAcquire('fair', { fair: true }))).toBeGreaterThan(fence(handle.fencingToken));
    },
  }),
  row({
    name: 'fair leave: a waiter giving up whose leave runs twice is gone from the queue; the waiter behind it is served at once',
    script: leaveFairQueueScript,
    arrange: (ctx) => ctx.peerLocks.acquire('fair', { fair: true }),
    act: async (ctx, holder) => {
      const keys = ctx.keys.lock('fair');
      const givingUp = ctx.locks.acquire('fair', { fair: true, waitTimeout: 600 });
      const outcome = givingUp.then(
        () => 'acquired',
        (error: unknown) => (error instanceof LockAcquireTimeoutError ? 'timed out' : String(error)),
      );
      await waitFor(async () => (await ctx.redis.llen(keys.queue)) === 1, 5_000, 'the first waiter to queue');
      // Behind it: another process's waiter, with less patience than a dead waiter's liveness (5 s).
      const behind = ctx.peerLocks.acquire('fair', { fair: true, waitTimeout: 4_000 });
      const behindOutcome = behind.then(
        (handle) => handle,
        (error: unknown) => error as Error,
      );
      const first = await outcome;
      await holder.release();
      return { first, behind: await behindOutcome };
    },
    check: async (ctx, holder, { first, behind }) => {
      expect(first).toBe('timed out');
      expect(behind).not.toBeInstanceOf(Error);
      const handle = behind as LockHandle;
      expect(fence(handle.fencingToken)).toBeGreaterThan(fence(holder.fencingToken));
      const keys = ctx.keys.lock('fair');
      expect(await ctx.redis.lrange(keys.queue, 0, -1)).toEqual([]);
      await handle.release();
    },
  }),
  row({
    name: 'writer leave: a waiting writer giving up whose leave runs twice no longer holds readers back',
    script: leaveReadWriteWritersScript,
    arrange: (ctx) => ctx.peerLocks.readWrite('rw-wait').read(),
    act: async (ctx) => {
      const writers = ctx.keys.lock('rw-wait').waitingWriters;
      const writer = ctx.locks.readWrite('rw-wait').write({ waitTimeout: 500 });
      const outcome = writer.then(
        () => 'acquired',
        (error: unknown) => (error instanceof LockAcquireTimeoutError ? 'timed out' : String(error)),
      );
      await waitFor(async () => (await ctx.redis.zcard(writers)) === 1, 5_000, 'the writer to wait');
      const readerWhileWaiting = await got(ctx.peerLocks.readWrite('rw-wait').tryRead());
      return { readerWhileWaiting, writer: await outcome };
    },
    check: async (ctx, reader, result) => {
      // Writer preference held new readers back while the writer waited; once it left, they get in at once.
      expect(result).toEqual({ readerWhileWaiting: false, writer: 'timed out' });
      expect(await ctx.redis.zcard(ctx.keys.lock('rw-wait').waitingWriters)).toBe(0);
      expect(await got(ctx.peerLocks.readWrite('rw-wait').tryRead())).toBe(true);
      await reader.release();
      expect(await got(ctx.peerLocks.readWrite('rw-wait').tryWrite())).toBe(true);
    },
  }),
  row({
    name: 'read/write extend: run twice, the hold keeps its single count and the longer lease',
    script: renewReadWriteLocksScript,
    arrange: (ctx) => ctx.locks.readWrite('rw-extended').write({ leaseTime: 1_500 }),
    act: (_ctx, handle) => handle.extend(20_000),
    check: async (ctx, handle) => {
      expect(handle.held).toBe(true);
      expect(await counts(ctx, 'rw-extended')).toEqual(['1']);
      expect(await ctx.redis.pttl(ctx.keys.lock('rw-extended').owners)).toBeGreaterThan(10_000);
      expect(await got(ctx.peerLocks.readWrite('rw-extended').tryRead())).toBe(false);
      await handle.release();
      expect(await takenAtOnce(ctx.peerLocks.readWrite('rw-extended').tryWrite())).toBeGreaterThan(fence(handle.fencingToken));
    },
  }),
  row({
    name: 'semaphore acquire: a permit whose acquire runs twice is granted (not refused for itself) and counted once',
    script: acquirePermitScript,
    act: (ctx) => ctx.locks.semaphore('pool', 1).tryAcquire(),
    check: async (ctx, _state, permit) => {
      expect(permit).not.toBeNull();
      expect(await ctx.redis.zcard(ctx.keys.semaphore('pool').permits)).toBe(1);
      expect(await got(ctx.peerLocks.semaphore('pool', 1).tryAcquire())).toBe(false);
      await permit!.release();
      expect(await ctx.redis.zcard(ctx.keys.semaphore('pool').permits)).toBe(0);
      expect(await takenAtOnce(ctx.peerLocks.semaphore('pool', 1).tryAcquire())).toBeGreaterThan(fence(permit!.fencingToken));
    },
  }),
  row({
    name: 'semaphore release: run twice, it gives back this permit only (another holder keeps its own)',
    script: releasePermitScript,
    arrange: async (ctx) => ({
      mine: await ctx.locks.semaphore('pool', 2).acquire(),
      theirs: await ctx.peerLocks.semaphore('pool', 2).acquire(),
    }),
    act: (_ctx, { mine }) => mine.release(),
    check: async (ctx, { theirs }) => {
      expect(await ctx.redis.zcard(ctx.keys.semaphore('pool').permits)).toBe(1);
      expect(theirs.held).toBe(true);
      const again = await ctx.peerLocks.semaphore('pool', 2).tryAcquire();
      expect(again).not.toBeNull();
      expect(await got(ctx.peerLocks.semaphore('pool', 2).tryAcquire())).toBe(false);
      await again!.release();
      await theirs.release();
    },
  }),
  row({
    name: 'semaphore renew: run twice, the permit keeps its longer lease and is counted once',
    script: renewPermitsScript,
    arrange: (ctx) => ctx.locks.semaphore('pool', 1).acquire({ leaseTime: 1_500 }),
    act: (_ctx, permit) => permit.extend(20_000),
    check: async (ctx, permit) => {
      const permits = ctx.keys.semaphore('pool').permits;
      const [seconds, micros] = await ctx.redis.time();
      const deadline = Number(await ctx.redis.zscore(permits, (await ctx.redis.zrange(permits, '0', '0'))[0]));
      expect(deadline - (Number(seconds) * 1000 + Number(micros) / 1000)).toBeGreaterThan(10_000);
      expect(await ctx.redis.zcard(permits)).toBe(1);
      expect(permit.held).toBe(true);
      await permit.release();
      expect(await takenAtOnce(ctx.peerLocks.semaphore('pool', 1).tryAcquire())).toBeGreaterThan(fence(permit.fencingToken));
    },
  }),
  row({
    name: 'multi-key acquire: a part whose acquire runs twice is held once; one release frees every key',
    script: acquireLockScript,
    nth: 2,
    act: (ctx) => ctx.locks.acquire(['account:a', 'account:b']),
    check: async (ctx, _state, handle) => {
      expect({ a: await counts(ctx, 'account:a'), b: await counts(ctx, 'account:b') }).toEqual({ a: ['1'], b: ['1'] });
      expect(await got(ctx.peerLocks.tryAcquire('account:b'))).toBe(false);
      await handle.release();
      expect(await got(ctx.peerLocks.tryAcquire(['account:a', 'account:b']))).toBe(true);
    },
  }),
];

// ---- jobs ------------------------------------------------------------------------------------

/** Nothing of the topic is waiting or running (what is dead is counted separately). */
async function drained(ctx: Omit<Ctx, 'lost'>): Promise<boolean> {
  const stats = await ctx.peerQueue.stats(TOPIC);
  return stats.scheduled + stats.due + stats.active === 0;
}

async function deadIds(ctx: Omit<Ctx, 'lost'>): Promise<string[]> {
  return (await ctx.peerQueue.deadLetters(TOPIC)).map((job) => job.id);
}

/** A consumer on the peer that records each delivery as `id@attempt` and when it started (monotonic ms). */
function recordingConsumer(
  ctx: Ctx,
  where: 'peer' | 'proxied' = 'peer',
): { consumer: Consumer; runs: string[]; startedAt: Map<string, number> } {
  const runs: string[] = [];
  const startedAt = new Map<string, number>();
  const queue = where === 'peer' ? ctx.peerQueue : ctx.queue;
  const consumer = queue.consume(TOPIC, (_payload, job) => {
    runs.push(`${job.id}@${job.attempt}`);
    if (!startedAt.has(job.id)) startedAt.set(job.id, performance.now());
  });
  return { consumer, runs, startedAt };
}

const jobRows: LostReplyRow[] = [
  row({
    name:
      'job claim: a claim run twice still delivers its job (maxAttempts 1): it runs once, with the first ' +
      'run’s fencing token, and is not dead-lettered',
    script: claimDueJobsScript,
    options: { delayQueue: { maxAttempts: 1, visibilityTimeout: 1_000 } },
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, { n: 1 }, { id: 'claimed' }),
    act: async (ctx) => {
      const runs: string[] = [];
      const tokens: string[] = [];
      const consumer = ctx.queue.consume(
        TOPIC,
        (_payload, job) => void (runs.push(`${job.id}@${job.attempt}`), tokens.push(job.fencingToken)),
      );
      await ctx.lost;
      await waitFor(() => drained(ctx), 8_000, 'the job to be done or dead');
      await consumer.close();
      return { runs, tokens };
    },
    check: async (ctx, _id, { runs, tokens }) => {
      expect({ runs, dead: await deadIds(ctx) }).toEqual({ runs: ['claimed@1'], dead: [] });
      // The second run answered with the first run's fencing token: the topic's counter was stepped once, to it.
      expect(await ctx.redis.get(ctx.keys.topic(TOPIC).fence)).toBe(tokens[0]);
    },
  }),
  row({
    name: 'job ack: an acknowledgement run twice leaves the job done once, and the consumer goes on with the next job',
    // The acknowledgement goes alone or rides on the next claim: lose whichever carries it.
    script: [ackJobsScript, claimDueJobsScript],
    where: (keysAndArgs) => keysAndArgs.includes('acked'),
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'acked' }),
    act: async (ctx) => {
      const recording = recordingConsumer(ctx, 'proxied');
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.get(TOPIC, 'acked')) === null, 8_000, 'the acknowledgement');
      return recording;
    },
    check: async (ctx, _id, { consumer, runs }) => {
      await ctx.peerQueue.schedule(TOPIC, 2, { id: 'next' });
      await waitFor(async () => runs.includes('next@1') && (await drained(ctx)), 8_000, 'the next job');
      await consumer.close();
      expect({ runs, dead: await deadIds(ctx) }).toEqual({ runs: ['acked@1', 'next@1'], dead: [] });
    },
  }),
  row({
    name: 'job ack with keepCompleted: an acknowledgement run twice keeps one completed record, with its result, and the consumer goes on',
    script: [ackJobsScript, claimDueJobsScript],
    where: (keysAndArgs) => keysAndArgs.includes('kept'),
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'kept' }),
    act: async (ctx) => {
      const runs: string[] = [];
      const consumer = ctx.queue.consume(
        TOPIC,
        (payload: number, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          return { doubled: payload * 2 };
        },
        { keepCompleted: { count: 10 } },
      );
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.get(TOPIC, 'kept'))?.state === 'completed', 8_000, 'the acknowledgement');
      return { consumer, runs };
    },
    check: async (ctx, _id, { consumer, runs }) => {
      await ctx.peerQueue.schedule(TOPIC, 2, { id: 'next' });
      await waitFor(async () => (await ctx.peerQueue.get(TOPIC, 'next'))?.state === 'completed', 8_000, 'the next job');
      await consumer.close();
      const keys = ctx.keys.topic(TOPIC);
      expect({ runs, dead: await deadIds(ctx) }).toEqual({ runs: ['kept@1', 'next@1'], dead: [] });
      expect(await ctx.redis.zrange(keys.completed, '0', '-1')).toEqual(['kept', 'next']);
      expect(await ctx.peerQueue.get(TOPIC, 'kept')).toMatchObject({ state: 'completed', attempts: 1, result: { doubled: 2 } });
    },
  }),
  row({
    name: 'job progress: a progress record run twice leaves that progress once; the job completes once',
    script: setProgressScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'progressing' }),
    act: async (ctx) => {
      const runs: string[] = [];
      const seen: unknown[] = [];
      const consumer = ctx.queue.consume(
        TOPIC,
        async (_payload, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          await job.progress({ done: 1, of: 2 });
          seen.push((await ctx.peerQueue.get(TOPIC, job.id))?.progress);
        },
        { keepCompleted: { count: 10 } },
      );
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.get(TOPIC, 'progressing'))?.state === 'completed', 8_000, 'the job to complete');
      await consumer.close();
      return { runs, seen };
    },
    check: async (ctx, _id, { runs, seen }) => {
      expect({ runs, seen, dead: await deadIds(ctx) }).toEqual({ runs: ['progressing@1'], seen: [{ done: 1, of: 2 }], dead: [] });
      expect(await ctx.peerQueue.get(TOPIC, 'progressing')).toMatchObject({ state: 'completed', progress: { done: 1, of: 2 } });
    },
  }),
  row({
    name: 'job logs: a batch of log lines appended twice is in the log once, in order; the job completes once',
    script: appendJobLogsScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'logging' }),
    act: async (ctx) => {
      const runs: string[] = [];
      const consumer = ctx.queue.consume(
        TOPIC,
        async (_payload, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          job.log('one');
          job.log('two');
          await ctx.lost;
          job.log('three');
        },
        { keepCompleted: { count: 10 } },
      );
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.get(TOPIC, 'logging'))?.state === 'completed', 8_000, 'the job to complete');
      await consumer.close();
      return { runs };
    },
    check: async (ctx, _id, { runs }) => {
      expect({ runs, dead: await deadIds(ctx) }).toEqual({ runs: ['logging@1'], dead: [] });
      expect(await ctx.peerQueue.logs(TOPIC, 'logging')).toEqual(['one', 'two', 'three']);
    },
  }),
  row({
    name: 'job fail: a failure record run twice counts one attempt and reports one retry; the retry runs once, not before its backoff',
    script: failJobScript,
    options: { delayQueue: { maxAttempts: 3, backoff: { delay: 300, jitter: 0 } } },
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'failing' }),
    act: async (ctx) => {
      const attempts: number[] = [];
      const retried: string[] = [];
      ctx.events.on('job.retried', (event) => void retried.push(`${event.id}@${event.attempt}`));
      let failedAt = 0;
      let retriedAt = 0;
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => {
        attempts.push(job.attempt);
        if (job.attempt === 1) {
          failedAt = performance.now();
          throw new Error('first attempt fails');
        }
        retriedAt = performance.now();
      });
      await ctx.lost;
      await waitFor(async () => attempts.length >= 2 && (await drained(ctx)), 8_000, 'the retry');
      await consumer.close();
      return { attempts, retried, backoffMs: retriedAt - failedAt };
    },
    check: async (ctx, _id, { attempts, retried, backoffMs }) => {
      expect({ attempts, retried, dead: await deadIds(ctx) }).toEqual({ attempts: [1, 2], retried: ['failing@1'], dead: [] });
      // Due 300 ms after the failure was recorded by Redis, which was after the handler threw.
      expect(backoffMs).toBeGreaterThanOrEqual(295);
    },
  }),
  row({
    name: 'job fail on the last attempt: run twice, the job is dead-lettered once, after its one run, and reported dead once',
    script: failJobScript,
    options: { delayQueue: { maxAttempts: 1 } },
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'last' }),
    act: async (ctx) => {
      const attempts: number[] = [];
      const dead: string[] = [];
      ctx.events.on('job.dead', (event) => void dead.push(`${event.id}@${event.attempt}`));
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => {
        attempts.push(job.attempt);
        throw new Error('always fails');
      });
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.stats(TOPIC)).dead === 1 && (await drained(ctx)), 8_000, 'the dead letter');
      await consumer.close();
      return { attempts, dead };
    },
    check: async (ctx, id, result) => {
      const letters = (await ctx.peerQueue.deadLetters(TOPIC)).map((job) => `${job.id}:${job.attempts}`);
      expect({ ...result, letters }).toEqual({ attempts: [1], dead: [`${id}@1`], letters: [`${id}:1`] });
    },
  }),
  row({
    name:
      'rate-limited job: a postpone run twice gives the attempt back once, keeps the group turn and sets one ' +
      'block; the job runs again once, on attempt 1, after the block, before the next job of its group',
    script: postponeRateLimitedJobScript,
    options: { delayQueue: { maxAttempts: 1 } },
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(TOPIC, [
        { payload: 1, group: 'g', id: 'limited' },
        { payload: 2, group: 'g', id: 'next' },
      ]),
    act: async (ctx) => {
      const runs: Array<{ run: string; claimedAt: number }> = [];
      const blocks: number[] = [];
      ctx.events.on('job.rate-limited', (event) => void blocks.push(event.blockedUntilMs));
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => {
        runs.push({ run: `${job.id}@${job.attempt}`, claimedAt: job.claimedAt.getTime() });
        if (runs.length === 1) throw new JobRateLimitedError(300);
      });
      await ctx.lost;
      await waitFor(async () => runs.length === 3 && (await drained(ctx)), 8_000, 'both jobs after the block');
      await consumer.close();
      return { runs, blocks };
    },
    check: async (ctx, _ids, { runs, blocks }) => {
      expect(runs.map((r) => r.run)).toEqual(['limited@1', 'limited@1', 'next@1']);
      expect(blocks).toHaveLength(1);
      for (const r of runs.slice(1)) expect(r.claimedAt).toBeGreaterThanOrEqual(blocks[0]);
      expect(await deadIds(ctx)).toEqual([]);
      expect(await ctx.peerQueue.stats(TOPIC)).toMatchObject({ grouped: 0, busyGroups: 0, active: 0 });
      expect(await ctx.redis.exists(ctx.keys.topic(TOPIC).groupsOut, ctx.keys.topic(TOPIC).groupsReady)).toBe(0);
    },
  }),
  row({
    name: 'block of a sharded topic: a block of the other shard run twice sets the same end; no job of either shard starts before it',
    script: blockTopicScript,
    options: { delayQueue: { topics: { [TOPIC]: { shards: 2 } } } },
    // Only the job that meets the limit at first: the others (in both shards) are scheduled once the
    // block of the other shard ran, so they are due at once and can only start after the block's end.
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 'limited', { id: 'limited' }),
    act: async (ctx) => {
      const runs: Array<{ run: string; claimedAt: number }> = [];
      const blocks: number[] = [];
      ctx.events.on('job.rate-limited', (event) => void blocks.push(event.blockedUntilMs));
      const consumer = ctx.queue.consume(
        TOPIC,
        (_payload, job) => {
          runs.push({ run: `${job.id}@${job.attempt}`, claimedAt: job.claimedAt.getTime() });
          if (runs.length === 1) throw new JobRateLimitedError(1_000);
        },
        { concurrency: 4 },
      );
      await ctx.lost;
      await ctx.peerQueue.scheduleMany(
        TOPIC,
        ['a', 'b', 'c', 'd'].map((id) => ({ payload: id, id })),
      );
      const ends = await Promise.all([0, 1].map((i) => ctx.redis.get(ctx.keys.topic(shardTopicName(TOPIC, i)).blocked)));
      await waitFor(async () => runs.length === 6 && (await drained(ctx)), 8_000, 'every job after the block');
      await consumer.close();
      return { runs, blocks, ends };
    },
    check: async (_ctx, _ids, { runs, blocks, ends }) => {
      expect(blocks).toHaveLength(1);
      expect(ends).toEqual([String(blocks[0]), String(blocks[0])]);
      expect(runs.map((r) => r.run).sort()).toEqual(['a@1', 'b@1', 'c@1', 'd@1', 'limited@1', 'limited@1']);
      for (const r of runs.slice(1)) expect(r.claimedAt).toBeGreaterThanOrEqual(blocks[0]);
    },
  }),
  row({
    name: 'claim during a rate-limited block: a claim run twice takes nothing; the job runs once, on attempt 1, after the block',
    script: claimDueJobsScript,
    arrange: async (ctx) => {
      const blocks: number[] = [];
      const consumer = ctx.peerQueue.consume(TOPIC, () => {
        throw new JobRateLimitedError(1_500);
      });
      const peerEvents = await ctx.peerQueue.schedule(TOPIC, 1, { id: 'blocked' });
      await waitFor(async () => (await ctx.redis.exists(ctx.keys.topic(TOPIC).blocked)) === 1, 8_000, 'the block');
      await consumer.close();
      blocks.push(Number(await ctx.redis.get(ctx.keys.topic(TOPIC).blocked)));
      return { id: peerEvents, untilMs: blocks[0] };
    },
    act: async (ctx, { untilMs }) => {
      const runs: Array<{ run: string; claimedAt: number }> = [];
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => {
        runs.push({ run: `${job.id}@${job.attempt}`, claimedAt: job.claimedAt.getTime() });
      });
      await ctx.lost;
      await waitFor(async () => runs.length === 1 && (await drained(ctx)), 8_000, 'the job after the block');
      await consumer.close();
      return { runs, untilMs };
    },
    check: async (ctx, { id }, { runs, untilMs }) => {
      expect(runs.map((r) => r.run)).toEqual([`${id}@1`]);
      expect(runs[0].claimedAt).toBeGreaterThanOrEqual(untilMs);
      expect(await deadIds(ctx)).toEqual([]);
    },
  }),
  row({
    name:
      'unrecoverable failure: a fail record run twice buries the job once after its one run (3 attempts allowed), reported ' +
      'dead once as unrecoverable',
    script: failJobScript,
    options: { delayQueue: { maxAttempts: 3 } },
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'unrecoverable' }),
    act: async (ctx) => {
      const attempts: number[] = [];
      const dead: string[] = [];
      ctx.events.on('job.dead', (event) => void dead.push(`${event.id}@${event.attempt}:${String(event.unrecoverable)}`));
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => {
        attempts.push(job.attempt);
        throw new UnrecoverableJobError('cannot succeed', { cause: new Error('the reason') });
      });
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.stats(TOPIC)).dead === 1 && (await drained(ctx)), 8_000, 'the dead letter');
      await consumer.close();
      return { attempts, dead };
    },
    check: async (ctx, id, result) => {
      const letters = await ctx.peerQueue.deadLetters(TOPIC);
      expect({ ...result, letters: letters.map((job) => `${job.id}:${job.attempts}:${job.lastError}`) }).toEqual({
        attempts: [1],
        dead: [`${id}@1:true`],
        letters: [`${id}:1:UnrecoverableJobError: cannot succeed`],
      });
      expect(letters[0].lastErrorStack).toContain('[cause]: Error: the reason');
    },
  }),
  row({
    name: 'job extend: a visibility extension run twice keeps the claim; a long handler is never delivered a second time',
    script: extendJobsScript,
    // 1.5 s (extended every 500 ms): with 600 ms, the reconnect and re-send through the fault proxy on a
    // loaded machine could outlast what was left of the claim, which is then rightly given up.
    options: { delayQueue: { visibilityTimeout: 1_500 } },
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'long' }),
    act: async (ctx) => {
      const deliveries: string[] = [];
      const finish = deferred();
      let aborted: boolean | undefined;
      const consumer = ctx.queue.consume(TOPIC, async (_payload, job) => {
        deliveries.push(`here@${job.attempt}`);
        await finish.promise;
        aborted = job.signal.aborted;
      });
      await waitFor(() => deliveries.length === 1, 8_000, 'the first delivery');
      // Another process polls the topic: a claim whose visibility lapsed would go to it.
      const peer = ctx.peerQueue.consume(TOPIC, (_payload, job) => void deliveries.push(`peer@${job.attempt}`));
      await ctx.lost;
      // Two visibility timeouts after the lost reply: only extensions that kept working keep the claim.
      await sleep(3_000);
      finish.resolve();
      await waitFor(() => drained(ctx), 8_000, 'the acknowledgement');
      await Promise.all([consumer.close(), peer.close()]);
      return { deliveries, aborted };
    },
    check: async (ctx, _id, result) => {
      expect({ ...result, dead: await deadIds(ctx) }).toEqual({ deliveries: ['here@1'], aborted: false, dead: [] });
    },
  }),
  row({
    name: 'schedule: a schedule run twice stores one job, which runs once and not before it is due',
    script: scheduleJobsScript,
    act: async (ctx) => {
      const recording = recordingConsumer(ctx);
      const sentAt = performance.now();
      const id = await ctx.queue.schedule(TOPIC, { n: 1 }, { delay: 400 });
      await waitFor(async () => recording.runs.length > 0 && (await drained(ctx)), 8_000, 'the job');
      await recording.consumer.close();
      return { id, sentAt, ...recording };
    },
    check: async (ctx, _state, { id, sentAt, runs, startedAt }) => {
      expect({ runs, dead: await deadIds(ctx) }).toEqual({ runs: [`${id}@1`], dead: [] });
      expect(startedAt.get(id)! - sentAt).toBeGreaterThanOrEqual(395);
    },
  }),
  row({
    name: 'schedule with replace: a replacement run twice runs the new job once (the second run does not re-queue a running job)',
    script: scheduleJobsScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 'old', { id: 'replaced', delay: 60_000 }),
    act: async (ctx) => {
      const payloads: string[] = [];
      const consumer = ctx.peerQueue.consume<string>(TOPIC, (payload, job) => void payloads.push(`${payload}@${job.attempt}`));
      await ctx.queue.schedule(TOPIC, 'new', { id: 'replaced', replace: true });
      await waitFor(async () => payloads.length > 0 && (await drained(ctx)), 8_000, 'the replacement to run');
      await consumer.close();
      return payloads;
    },
    check: async (ctx, _id, payloads) => {
      expect({ payloads, dead: await deadIds(ctx) }).toEqual({ payloads: ['new@1'], dead: [] });
    },
  }),
  row({
    name: 'scheduleMany: a batch run twice stores each job once; each runs once, not before it is due',
    script: scheduleJobsScript,
    act: async (ctx) => {
      const recording = recordingConsumer(ctx);
      const sentAt = performance.now();
      const ids = await ctx.queue.scheduleMany(
        TOPIC,
        [1, 2, 3, 4, 5].map((n) => ({ payload: n, delay: 300, id: `many-${n}` })),
      );
      await waitFor(async () => recording.runs.length >= 5 && (await drained(ctx)), 8_000, 'the batch');
      await recording.consumer.close();
      return { ids, sentAt, ...recording };
    },
    check: async (ctx, _state, { ids, sentAt, runs, startedAt }) => {
      expect(ids).toEqual(['many-1', 'many-2', 'many-3', 'many-4', 'many-5']);
      expect({ runs: [...runs].sort(), dead: await deadIds(ctx) }).toEqual({ runs: ids.map((id) => `${id}@1`), dead: [] });
      for (const id of ids) expect(startedAt.get(id)! - sentAt).toBeGreaterThanOrEqual(295);
    },
  }),
  row({
    name: 'cancel: a cancel run twice still answers true (the job existed) and the job is gone',
    script: cancelJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'cancelled', delay: 60_000 }),
    act: (ctx, id) => ctx.queue.cancel(TOPIC, id),
    check: async (ctx, id, existed) => {
      expect(existed).toBe(true);
      await expectGoneFromTopic(ctx, id);
    },
  }),
  row({
    name: 'waitFor: a wait whose read-and-record runs twice is recorded once and resolves with the result of the one run',
    script: watchJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 3, { id: 'waited' }),
    act: async (ctx, id) => {
      const result = ctx.queue.waitFor(TOPIC, id);
      await ctx.lost;
      const waited = await ctx.redis.hgetall(ctx.keys.topic(TOPIC).waited);
      const runs: string[] = [];
      const consumer = ctx.peerQueue.consume(
        TOPIC,
        (payload: number, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          return payload * 2;
        },
        { keepCompleted: { count: 10 } },
      );
      const value = await result;
      await consumer.close();
      return { value, waited, runs };
    },
    check: async (ctx, id, { value, waited, runs }) => {
      expect({ value, waited, runs }).toEqual({ value: 6, waited: { [id]: 'publish' }, runs: [`${id}@1`] });
      expect(await ctx.redis.exists(ctx.keys.topic(TOPIC).waited)).toBe(0);
    },
  }),
  row({
    name: 'pause/resume: a pause run twice still answers that it paused the topic, and a resume run twice that it resumed it',
    script: pauseTopicScript,
    nth: 1,
    act: async (ctx) => {
      const paused = await ctx.queue.pause(TOPIC);
      const pausedStats = await ctx.peerQueue.stats(TOPIC);
      return { paused, pausedStats };
    },
    check: async (ctx, _state, { paused, pausedStats }) => {
      expect(paused).toBe(true);
      expect(pausedStats.paused).toBe(true);
      expect(await ctx.queue.resume(TOPIC)).toBe(true);
      expect((await ctx.peerQueue.stats(TOPIC)).paused).toBe(false);
    },
  }),
  row({
    name: 'group limit: setting groupConcurrency run twice leaves the limit set once, and two jobs of a group run at once',
    script: setGroupLimitScript,
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(TOPIC, [
        { payload: 1, group: 'g' },
        { payload: 2, group: 'g' },
        { payload: 3, group: 'g' },
      ]),
    act: async (ctx) => {
      const release = deferred();
      let running = 0;
      let most = 0;
      const consumer = ctx.queue.consume(
        TOPIC,
        async () => {
          most = Math.max(most, ++running);
          await release.promise;
          running--;
        },
        { concurrency: 4, groupConcurrency: 2 },
      );
      await ctx.lost;
      await waitFor(() => most === 2, 8_000, 'two jobs of the group to run at once');
      release.resolve();
      await waitFor(() => drained(ctx), 8_000, 'the group to drain');
      await consumer.close();
      return most;
    },
    check: async (ctx, _state, most) => {
      expect(most).toBe(2);
      expect(await ctx.redis.get(ctx.keys.topic(TOPIC).groupLimit)).toBe('2');
      expect(await ctx.peerQueue.stats(TOPIC)).toMatchObject({ grouped: 0, busyGroups: 0 });
    },
  }),
  row({
    name: 'group ack: finishing a job of a group run twice frees its group once: the next job runs, alone, and the group ends idle',
    script: [ackJobsScript, claimDueJobsScript],
    where: (keysAndArgs) => keysAndArgs.includes('g-first'),
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(TOPIC, [
        { payload: 1, group: 'g', id: 'g-first' },
        { payload: 2, group: 'g', id: 'g-second' },
      ]),
    act: async (ctx) => {
      const recording = recordingConsumer(ctx, 'proxied');
      await ctx.lost;
      await waitFor(() => drained(ctx), 8_000, 'the group to drain');
      await recording.consumer.close();
      return recording.runs;
    },
    check: async (ctx, _state, runs) => {
      expect(runs).toEqual(['g-first@1', 'g-second@1']);
      expect(await ctx.peerQueue.stats(TOPIC)).toMatchObject({ grouped: 0, busyGroups: 0, active: 0 });
      expect(await ctx.redis.exists(ctx.keys.topic(TOPIC).groupsOut, ctx.keys.topic(TOPIC).groupsReady)).toBe(0);
    },
  }),
  row({
    name:
      'group turn release: a cancelled running job of a group reports its handler returned twice: the ' +
      'group starts its next job once, and ends idle',
    script: releaseGroupTurnScript,
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(TOPIC, [
        { payload: 'A', group: 'g', id: 'g-a' },
        { payload: 'B', group: 'g', id: 'g-b' },
      ]),
    act: async (ctx) => {
      const runs: string[] = [];
      const aStarted = deferred();
      const consumer = ctx.queue.consume<string>(
        TOPIC,
        async (payload, job) => {
          runs.push(payload);
          if (payload !== 'A') return;
          aStarted.resolve();
          await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
        },
        { concurrency: 2 },
      );
      await aStarted.promise;
      await ctx.peerQueue.cancel(TOPIC, 'g-a');
      await ctx.lost;
      await waitFor(async () => runs.includes('B') && (await drained(ctx)), 8_000, 'the next job of the group');
      await consumer.close();
      return runs;
    },
    check: async (ctx, _state, runs) => {
      expect(runs).toEqual(['A', 'B']);
      expect(await ctx.peerQueue.stats(TOPIC)).toMatchObject({ grouped: 0, busyGroups: 0, active: 0 });
      expect(await ctx.redis.exists(`${ctx.keys.topic(TOPIC).jobs.slice(0, -':jobs'.length)}:groups-held`)).toBe(0);
    },
  }),
  row({
    name: 'rate-limited claim: a claim run twice counts its jobs against the limit once',
    script: claimDueJobsScript,
    // The consumer's claims carry its rate window (ARGV[7]).
    where: (keysAndArgs) => keysAndArgs.includes('59999'),
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(
        TOPIC,
        [1, 2, 3].map((n) => ({ payload: n, id: `r-${n}` })),
      ),
    act: async (ctx) => {
      const runs: string[] = [];
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => void runs.push(job.id), {
        concurrency: 4,
        rateLimit: { max: 2, duration: 59_999 },
      });
      await ctx.lost;
      await waitFor(() => runs.length === 2, 8_000, 'the two jobs the limit lets through');
      await consumer.close();
      return runs;
    },
    check: async (ctx, _state, runs) => {
      expect(runs.sort()).toEqual(['r-1', 'r-2']);
      // Claims only (scores from 0): the log's window marker (a negative score) is not a claim.
      expect(await ctx.redis.zcount(ctx.keys.topic(TOPIC).rateLog, 0, '+inf')).toBe(2);
      expect(await ctx.peerQueue.stats(TOPIC)).toMatchObject({ due: 1, active: 0 });
    },
  }),
  row({
    name:
      'cancel of a running job: a cancel run twice still answers true; the handler on another instance ' +
      'aborts with JobCancelledError, runs once and is not retried',
    script: cancelJobScript,
    options: { delayQueue: { maxAttempts: 2, backoff: { delay: 0, jitter: 0 } } },
    arrange: async (ctx) => {
      const runs: string[] = [];
      const reasons: unknown[] = [];
      const started = deferred();
      const consumer = ctx.peerQueue.consume(TOPIC, async (_payload, job) => {
        runs.push(`${job.id}@${job.attempt}`);
        started.resolve();
        await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
        reasons.push(job.signal.reason);
        throw new Error('fails after its abort');
      });
      const id = await ctx.peerQueue.schedule(TOPIC, 1, { id: 'cancelled-running' });
      await started.promise;
      return { id, runs, reasons, consumer };
    },
    act: (ctx, { id }) => ctx.queue.cancel(TOPIC, id),
    check: async (ctx, { id, runs, reasons, consumer }, existed) => {
      await waitFor(() => reasons.length > 0, 8_000, 'the abort of the running handler');
      await consumer.close();
      expect({ existed, runs, reasons: reasons.map((reason) => (reason as Error).name) }).toEqual({
        existed: true,
        runs: [`${id}@1`],
        reasons: ['JobCancelledError'],
      });
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
    },
  }),
  row({
    name: 'scheduleWithResult: a schedule run twice answers created, as its first run did, and stores one job',
    script: scheduleJobsScript,
    act: (ctx) => ctx.queue.scheduleWithResult(TOPIC, { n: 1 }, { id: 'fresh', delay: 60_000 }),
    check: async (ctx, _state, result) => {
      expect(result).toEqual({ id: 'fresh', status: 'created' });
      expect((await ctx.peerQueue.get(TOPIC, 'fresh'))?.payload).toEqual({ n: 1 });
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1 }));
    },
  }),
  row({
    name: 'schedule with a throttle: run twice it answers created, as its first run did; one job holds the key',
    script: scheduleJobsScript,
    act: (ctx) => ctx.queue.scheduleWithResult(TOPIC, { n: 1 }, { delay: 60_000, dedupe: { key: 'k', ttl: 60_000 } }),
    check: async (ctx, _state, result) => {
      expect(result).toEqual({ id: expect.any(String), status: 'created' });
      expect(await ctx.redis.get(`${ctx.keys.topic(TOPIC).jobs.slice(0, -':jobs'.length)}:dedupe:k`)).toBe(result.id);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1 }));
      const later = await ctx.peerQueue.scheduleWithResult(TOPIC, { n: 2 }, { delay: 60_000, dedupe: { key: 'k', ttl: 60_000 } });
      expect(later).toEqual({ id: result.id, status: 'existing' });
    },
  }),
  row({
    name: 'schedule with a debounce: a restart run twice answers replaced and leaves one job with its payload, due ttl after it',
    script: scheduleJobsScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 'first', { dedupe: { key: 'k', ttl: 60_000, mode: 'debounce' } }),
    act: async (ctx) => {
      const sentAt = Date.now();
      const result = await ctx.queue.scheduleWithResult(TOPIC, 'second', { dedupe: { key: 'k', ttl: 60_000, mode: 'debounce' } });
      return { sentAt, result };
    },
    check: async (ctx, first, { sentAt, result }) => {
      expect(result).toEqual({ id: first, status: 'replaced' });
      const job = await ctx.peerQueue.get(TOPIC, first);
      expect(job?.payload).toBe('second');
      expect(job!.scheduledAt!.getTime()).toBeGreaterThanOrEqual(sentAt + 60_000 - 1);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1 }));
    },
  }),
  row({
    name: 'cancel waiting (dashboard): a cancel run twice still answers cancelled and the job is gone',
    script: cancelWaitingJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'cancelled-waiting', delay: 60_000 }),
    act: (ctx, id) => ctx.commands.cancelWaiting(TOPIC, id),
    check: async (ctx, id, outcome) => {
      expect(outcome).toBe('cancelled');
      await expectGoneFromTopic(ctx, id);
    },
  }),
  row({
    name: 'delete dead (dashboard): a delete run twice still answers true and the dead letter is gone',
    script: deleteDeadJobScript,
    arrange: async (ctx) => {
      const consumer = ctx.peerQueue.consume(TOPIC, () => Promise.reject(new Error('always fails')), { maxAttempts: 1 });
      await ctx.peerQueue.schedule(TOPIC, 1, { id: 'buried' });
      await waitFor(async () => (await deadIds(ctx)).includes('buried'), 8_000, 'the job to reach the dead letters');
      await consumer.close();
      return 'buried';
    },
    act: (ctx, id) => ctx.commands.deleteDead(TOPIC, id),
    check: async (ctx, id, deleted) => {
      expect(deleted).toBe(true);
      await expectGoneFromTopic(ctx, id);
    },
  }),
  row({
    name: 'reschedule: a reschedule run twice answers true; the job runs once, not before its new time',
    script: rescheduleJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'moved', delay: 60_000 }),
    act: async (ctx, id) => {
      const recording = recordingConsumer(ctx);
      const sentAt = performance.now();
      const moved = await ctx.queue.reschedule(TOPIC, id, { delay: 500 });
      await waitFor(async () => recording.runs.length > 0 && (await drained(ctx)), 8_000, 'the moved job');
      await recording.consumer.close();
      return { moved, sentAt, ...recording };
    },
    check: async (ctx, id, { moved, sentAt, runs, startedAt }) => {
      expect({ moved, runs, dead: await deadIds(ctx) }).toEqual({ moved: true, runs: [`${id}@1`], dead: [] });
      expect(startedAt.get(id)! - sentAt).toBeGreaterThanOrEqual(495);
    },
  }),
  row({
    name: 'updatePayload: run twice, it answers true and the job runs once, with the new payload',
    script: updatePayloadScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, { v: 'old' }, { id: 'updated' }),
    act: async (ctx, id) => {
      const payloads: unknown[] = [];
      const updated = await ctx.queue.updatePayload(TOPIC, id, { v: 'new' });
      const consumer = ctx.peerQueue.consume(TOPIC, (payload) => void payloads.push(payload));
      await waitFor(async () => payloads.length > 0 && (await drained(ctx)), 8_000, 'the updated job');
      await consumer.close();
      return { updated, payloads };
    },
    check: async (ctx, _id, result) => {
      expect({ ...result, dead: await deadIds(ctx) }).toEqual({ updated: true, payloads: [{ v: 'new' }], dead: [] });
    },
  }),
  row({
    name: 'drain: a batch run twice answers how many it removed, once; the waiting jobs are gone, the topic runs new jobs',
    script: drainWaitingJobsScript,
    arrange: async (ctx) => {
      await ctx.peerQueue.scheduleMany(TOPIC, [
        { payload: 1, id: 'drained-1', delay: 60_000 },
        { payload: 2, id: 'drained-2' },
      ]);
    },
    act: (ctx) => ctx.queue.drain(TOPIC),
    check: async (ctx, _state, removed) => {
      expect(removed).toBe(2);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
      await ctx.peerQueue.schedule(TOPIC, 3, { id: 'after-drain' });
      expect(await runToEnd(ctx)).toEqual({ runs: ['after-drain@1'], dead: [] });
    },
  }),
  row({
    name: 'clean: a batch run twice answers how many it removed, once; the dead letters are gone',
    script: cleanFinishedJobsScript,
    arrange: (ctx) => buryJobs(ctx, ['cleaned-1', 'cleaned-2']),
    act: (ctx) => ctx.queue.clean(TOPIC, { state: 'dead' }),
    check: async (ctx, _state, removed) => {
      expect({ removed, dead: await deadIds(ctx) }).toEqual({ removed: 2, dead: [] });
    },
  }),
  row({
    name: 'reschedule to now: run twice while a consumer takes the job at once, it still answers true and the job runs once',
    script: rescheduleJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'now', delay: 60_000 }),
    act: async (ctx, id) => {
      const recording = recordingConsumer(ctx);
      const moved = await ctx.queue.reschedule(TOPIC, id, { delay: 0 });
      await waitFor(async () => recording.runs.length > 0 && (await drained(ctx)), 8_000, 'the moved job');
      await recording.consumer.close();
      return { moved, runs: recording.runs };
    },
    check: async (ctx, id, result) => {
      expect({ ...result, dead: await deadIds(ctx) }).toEqual({ moved: true, runs: [`${id}@1`], dead: [] });
    },
  }),
  row({
    name: 'retryDead(topic, id): run twice, it answers 1 and the job runs once more',
    script: retryDeadJobsScript,
    arrange: (ctx) => buryJobs(ctx, ['buried']),
    act: (ctx) => ctx.queue.retryDead(TOPIC, 'buried'),
    check: async (ctx, _state, requeued) => {
      expect(requeued).toBe(1);
      expect(await runToEnd(ctx)).toEqual({ runs: ['buried@1'], dead: [] });
    },
  }),
  row({
    name: 'retryDead(topic): a batch run twice answers how many it requeued, and each runs once more',
    script: retryDeadJobsScript,
    arrange: (ctx) => buryJobs(ctx, ['buried-1', 'buried-2']),
    act: (ctx) => ctx.queue.retryDead(TOPIC),
    check: async (ctx, _state, requeued) => {
      expect(requeued).toBe(2);
      expect(await runToEnd(ctx)).toEqual({ runs: ['buried-1@1', 'buried-2@1'], dead: [] });
    },
  }),
  row({
    name: 'hand-back at shutdown: a hand-back run twice returns each unstarted job once, with its attempt undone once',
    script: releaseJobsScript,
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(
        TOPIC,
        ['zero', 'one', 'two', 'three'].map((id) => ({ payload: id, id })),
      ),
    act: async (ctx) => {
      const runs: string[] = [];
      const started = deferred();
      const finish = deferred();
      const consumer = ctx.queue.consume(
        TOPIC,
        async (_payload, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          // 'zero' returns at once, so the consumer claims one job ahead of its slot (prefetch).
          if (job.id === 'zero') return;
          started.resolve();
          await finish.promise;
        },
        { concurrency: 1 },
      );
      await started.promise; // one running, one more claimed ahead into the buffer
      const closing = consumer.close();
      await ctx.lost;
      finish.resolve();
      await closing;
      return runs;
    },
    check: async (ctx, _ids, here) => {
      const there = await runToEnd(ctx);
      expect(there.dead).toEqual([]);
      expect(here).toEqual(['zero@1', 'one@1']);
      // Every job ran exactly once over both processes, each on its first attempt.
      expect([...here, ...there.runs].sort()).toEqual(['one@1', 'three@1', 'two@1', 'zero@1']);
    },
  }),
  row({
    name:
      'hand-back of a prefetched job a busy consumer cannot start (issue 23, defect 6): run twice, each ' +
      'job runs once, on its first attempt',
    script: releaseJobsScript,
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(
        TOPIC,
        ['zero', 'one', 'two', 'three'].map((id) => ({ payload: id, id })),
      ),
    act: async (ctx) => {
      const runs: string[] = [];
      const finish = deferred();
      // 'zero' returns at once, so the consumer claims 'two' ahead of its slot; 'one' then holds the
      // slot, and 'two' is handed back while the consumer runs.
      const consumer = ctx.queue.consume(
        TOPIC,
        async (_payload, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          if (job.id !== 'zero') await finish.promise;
        },
        { concurrency: 1 },
      );
      await ctx.lost;
      // The peer, idle, runs what the busy consumer handed back while 'one' still holds its slot.
      const peer = recordingConsumer(ctx);
      await waitFor(() => peer.runs.length >= 2, 8_000, "'two' and 'three' to run on the peer");
      // 'one' is acknowledged through the connection the lost reply reset, whenever it is back: not waited for here.
      finish.resolve();
      await Promise.all([consumer.close(), peer.consumer.close()]);
      return { here: runs, there: [...peer.runs] };
    },
    check: async (ctx, _ids, { here, there }) => {
      expect(await deadIds(ctx)).toEqual([]);
      expect(here).toEqual(['zero@1', 'one@1']);
      // Every job ran exactly once over both processes, each on its first attempt.
      expect([...here, ...there].sort()).toEqual(['one@1', 'three@1', 'two@1', 'zero@1']);
    },
  }),
  row({
    name:
      'hand-back after drain() of a job claimed ahead (drop-job-lua-snippet.ts): run twice, the job is removed ' +
      'once and nothing of what waited runs',
    script: releaseJobsScript,
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(
        TOPIC,
        ['zero', 'one', 'two', 'three'].map((id) => ({ payload: id, id })),
      ),
    act: async (ctx) => {
      const runs: string[] = [];
      const finish = deferred();
      // 'zero' returns at once, so the consumer claims 'two' ahead of its slot while 'one' holds it.
      const consumer = ctx.queue.consume(
        TOPIC,
        async (_payload, job) => {
          runs.push(`${job.id}@${job.attempt}`);
          if (job.id !== 'zero') await finish.promise;
        },
        { concurrency: 1 },
      );
      await waitFor(async () => (await ctx.peerQueue.stats(TOPIC)).active >= 2, 8_000, "a job claimed ahead of 'one'");
      // What waits is drained; what was claimed ahead goes when it is handed back (its reply lost).
      const claimedAhead = (await ctx.peerQueue.stats(TOPIC)).active - 1;
      const drained = await ctx.peerQueue.drain(TOPIC);
      await ctx.lost;
      await waitFor(async () => (await ctx.peerQueue.stats(TOPIC)).active === 1, 8_000, 'the claimed-ahead jobs handed back');
      finish.resolve();
      await consumer.close();
      return { runs, drained, claimedAhead };
    },
    check: async (ctx, _ids, { runs, drained, claimedAhead }) => {
      expect(claimedAhead).toBeGreaterThanOrEqual(1);
      // 'three' and 'two' are each removed once: by the drain, or at their hand-back (one may be handed
      // back just before the drain reads the queue: then the drain removes it).
      expect(drained).toBeLessThanOrEqual(2);
      expect(runs).toEqual(['zero@1', 'one@1']);
      expect(await ctx.peerQueue.get(TOPIC, 'two')).toBeNull();
      expect(await ctx.peerQueue.get(TOPIC, 'three')).toBeNull();
      expect(await runToEnd(ctx)).toEqual({ runs: [], dead: [] });
    },
  }),
];

/** Repeatable schedules (issue 15): each tick enqueued once, whatever call is run twice. */
const repeatRows: LostReplyRow[] = [
  row({
    name: 'repeat (upsert): an upsert run twice stores one schedule and queues one tick job, and answers the tick it queued',
    script: upsertRepeatScript,
    act: (ctx) => ctx.queue.repeat(TOPIC, { every: 60_000 }, { payload: { n: 1 } }),
    check: async (ctx, _state, info) => {
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([info]);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1, schedules: 1 }));
      expect(await ctx.peerQueue.get(TOPIC, `repeat:${TOPIC}@${info.nextRunAt.getTime()}`)).toMatchObject({ payload: { n: 1 } });
    },
  }),
  row({
    name: 'repeat (advance): the advance a consumer sends for a claimed tick, run twice, enqueues the next tick once; every tick runs once',
    script: advanceRepeatScript,
    arrange: (ctx) => ctx.peerQueue.repeat(TOPIC, { every: 300 }),
    act: async (ctx) => {
      const recording = recordingConsumer(ctx, 'proxied');
      await ctx.lost;
      await waitFor(() => recording.runs.length >= 4, 10_000, 'four ticks');
      await recording.consumer.close();
      return recording.runs;
    },
    check: async (_ctx, info, runs) => {
      // Every run a first attempt of its own tick, ticks one period apart from the first queued one.
      const ticks = runs.map((run) => /^repeat:jobs@(\d+)@1$/.exec(run)?.[1]).map(Number);
      const first = info.nextRunAt.getTime();
      expect(ticks).toEqual(ticks.map((_tick, i) => first + i * 300));
    },
  }),
  row({
    name: 'removeRepeat: a removal run twice still answers true; the schedule and its waiting tick are gone',
    script: removeRepeatScript,
    arrange: (ctx) => ctx.peerQueue.repeat(TOPIC, { every: 60_000 }),
    act: (ctx) => ctx.queue.removeRepeat(TOPIC),
    check: async (ctx, _state, existed) => {
      expect(existed).toBe(true);
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([]);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
    },
  }),
];

/** Where a script's argument `name` is among the keys and args of its calls. */
function argAt<A extends Record<string, ScriptArgType>>(script: JobScript<string, A, string, unknown>, name: keyof A & string): number {
  return script.contract.keys.length + Object.keys(script.contract.args).indexOf(name);
}

/** Where the advance script's tick to queue ('' for a bounded schedule's finish) is among its keys and args. */
const NEXT_TICK_AT = argAt(advanceRepeatScript, 'nextTick');

/** A bounded schedule of `limit` ticks every 300 ms, run by a consumer on the proxied connection until it is finished and idle. */
async function runBounded(ctx: Ctx, limit: number): Promise<string[]> {
  const recording = recordingConsumer(ctx, 'proxied');
  await ctx.lost;
  await waitFor(
    async () => {
      const [info] = await ctx.peerQueue.listRepeats(TOPIC);
      return info?.finished === true && recording.runs.length >= limit && (await drained(ctx));
    },
    15_000,
    `the ${limit} runs of the bounded schedule`,
  );
  await recording.consumer.close();
  return recording.runs;
}

/** Bounded repeats: the limit is counted once per tick queued, whatever call is run twice. */
repeatRows.push(
  row({
    name: 'repeat with limit and endDate (upsert): run twice, one schedule with runs 0 and one tick job; the bounds are echoed',
    script: upsertRepeatScript,
    act: (ctx) => ctx.queue.repeat(TOPIC, { every: 60_000 }, { limit: 3, endDate: Date.UTC(2099, 0, 1) }),
    check: async (ctx, _state, info) => {
      expect(info).toMatchObject({ runs: 0, limit: 3, endDate: new Date(Date.UTC(2099, 0, 1)) });
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([info]);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1, schedules: 1 }));
    },
  }),
  row({
    name:
      'repeat with a limit (advance): the advance a consumer sends for a claimed tick, run twice, counts ' +
      'one run; exactly `limit` ticks run, each once',
    script: advanceRepeatScript,
    arrange: (ctx) => ctx.peerQueue.repeat(TOPIC, { every: 300 }, { limit: 3 }),
    act: (ctx) => runBounded(ctx, 3),
    check: async (ctx, info, runs) => {
      const first = info.nextRunAt.getTime();
      expect(runs).toEqual([0, 1, 2].map((i) => `repeat:jobs@${first + i * 300}@1`));
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toMatchObject([{ runs: 3, limit: 3, finished: true }]);
    },
  }),
  row({
    name:
      'repeat with a limit (finish): the last claim’s advance, which queues nothing, run twice, records ' +
      'the last run once; no tick after the limit',
    script: advanceRepeatScript,
    where: (keysAndArgs) => keysAndArgs[NEXT_TICK_AT] === '',
    arrange: (ctx) => ctx.peerQueue.repeat(TOPIC, { every: 300 }, { limit: 2 }),
    act: (ctx) => runBounded(ctx, 2),
    check: async (ctx, info, runs) => {
      const first = info.nextRunAt.getTime();
      expect(runs).toEqual([0, 1].map((i) => `repeat:jobs@${first + i * 300}@1`));
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toMatchObject([{ runs: 2, finished: true, lastRunAt: new Date(first + 300) }]);
    },
  }),
);

/** Where the upsert script's restore flag ('1': a restore after data loss) is among its keys and args. */
const RESTORE_FLAG_AT = argAt(upsertRepeatScript, 'restore');

/** The restore an instance that upserted the schedule would send (its stored form, a first tick an hour ahead). */
function restoreOf(ctx: Omit<Ctx, 'lost'>, stored: string, seenAt: number | '') {
  const keys = ctx.keys.topic(TOPIC);
  const tail = (JSON.parse(stored.slice(40)) as { t: string }).t;
  return upsertRepeatScript.call(
    ctx.redis,
    { ...keys, record: operationKey(keys.jobs, 'restore') },
    {
      scheduleId: TOPIC,
      stored,
      firstTick: String(Date.now() + 3_600_000),
      tail,
      restore: true,
      deadline: '',
      seenAt: String(seenAt),
      limit: '',
      startDate: '',
      endDate: '',
    },
  );
}

/** Redis lost the row's data (a restart without persistence): every key of the row is deleted. */
async function loseRowData(ctx: Omit<Ctx, 'lost'>): Promise<void> {
  const keys = await ctx.redis.keys(`${ctx.keyPrefix}:*`);
  if (keys.length > 0) await ctx.redis.del(...keys);
}

/** Issue 23 defect 1: restores after data loss, and removals that must outlive them. */
const restoreRows: LostReplyRow[] = [
  row({
    name: 'repeat (restore after data loss): the restore an instance runs twice stores the schedule once and queues one tick job',
    script: upsertRepeatScript,
    where: (keysAndArgs) => keysAndArgs[RESTORE_FLAG_AT] === '1',
    // The restore comes from the periodic check (every 5 s), once the schedule has been missing for over one interval.
    faultWaitMs: 25_000,
    arrange: async (ctx) => {
      await ctx.queue.repeat(TOPIC, { every: 60_000 }, { payload: { n: 2 } });
      await loseRowData(ctx);
    },
    act: async (ctx) => {
      await ctx.lost;
      const [info] = await waitFor(
        async () => {
          const listed = await ctx.peerQueue.listRepeats(TOPIC);
          return listed.length > 0 ? listed : false;
        },
        30_000,
        'the schedule to be restored',
      );
      return info;
    },
    check: async (ctx, _state, info) => {
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([info]);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1, schedules: 1 }));
      expect(await ctx.peerQueue.get(TOPIC, `repeat:${TOPIC}@${info.nextRunAt.getTime()}`)).toMatchObject({ payload: { n: 2 } });
    },
  }),
  row({
    name: 'removeRepeat run twice records the removal: a restore by an instance that upserted the schedule stores nothing',
    script: removeRepeatScript,
    arrange: async (ctx) => {
      await ctx.peerQueue.repeat(TOPIC, { every: 60_000 });
      return { stored: (await ctx.redis.hget(ctx.keys.topic(TOPIC).repeats, TOPIC))! };
    },
    act: (ctx) => ctx.queue.removeRepeat(TOPIC),
    check: async (ctx, { stored }, existed) => {
      expect(existed).toBe(true);
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([]);
      // The restore the peer's check would send (its definition, a first tick ahead): refused (status -2).
      const { status } = await restoreOf(ctx, stored, '');
      expect(status).toBe('removed');
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
    },
  }),
];

restoreRows.push(
  row({
    name:
      'removals re-recorded after data loss, run twice: the removal is recorded once more; a restore by ' +
      'an instance that upserted the schedule before it stores nothing',
    script: reassertRemovalsScript,
    arrange: async (ctx) => {
      await ctx.peerQueue.repeat(TOPIC, { every: 60_000 });
      const keys = ctx.keys.topic(TOPIC);
      const stored = (await ctx.redis.hget(keys.repeats, TOPIC))!;
      const definedAt = Number(await ctx.redis.zscore(keys.repeatDefined, TOPIC));
      // This instance removes it, then Redis loses its data (the removal's record with it).
      expect(await ctx.queue.removeRepeat(TOPIC)).toBe(true);
      await loseRowData(ctx);
      return { keys, stored, definedAt };
    },
    // Its periodic check (every 5 s) records the removal again, before the peer's restore is due.
    act: async (ctx, { keys }) => {
      await ctx.lost;
      await waitFor(async () => (await ctx.redis.zscore(keys.repeatRemoved, TOPIC)) !== null, 8_000, 'the removal recorded again');
    },
    check: async (ctx, { stored, definedAt }) => {
      // The restore the peer's check would send (its definition, known from before the removal): refused (status -2).
      const { status } = await restoreOf(ctx, stored, definedAt);
      expect(status).toBe('removed');
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([]);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
    },
  }),
);

/**
 * The transactional outbox (issue 23 defects 2, 3): the fenced writes after COMMIT. Both apps share
 * one PGlite outbox whose relays never look (minAge one hour), so the write under test is the
 * proxied app's own write right after COMMIT; run twice, the second run finds the row's record.
 */
/**
 * Created by the outbox rows' `beforeAll`, not when this file loads: PGlite's start runs
 * WebAssembly on this process's event loop for seconds, which would stall the lock rows' clients
 * and fault proxy (replies read late, leases renewed late) if it ran beside them.
 */
let outboxDb: PGlite | undefined;
const outboxTx = new AsyncLocalStorage<Transaction>();
async function startOutboxDb(): Promise<void> {
  outboxDb = new PGlite();
  await outboxDb.exec(new PostgresJobOutbox({ transaction: inPgTransaction(() => undefined), relay: outboxDb }).migration);
}
function openOutboxDb(): PGlite {
  if (!outboxDb) throw new Error('the outbox rows start their PGlite database in beforeAll');
  return outboxDb;
}
/** The outbox rows' module options, built when a row runs (after `startOutboxDb`). */
function outboxOptions(): RedisLockModuleOptions {
  return {
    delayQueue: {
      outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => outboxTx.getStore()), relay: openOutboxDb() }),
      outboxRelay: { minAge: 3_600_000 },
    },
  };
}
/** Runs `work` in a committed PGlite transaction; resolves after the after-commit write (up to 2 s). */
async function inOutboxTransaction<T>(work: () => Promise<T>): Promise<T> {
  return runInTransaction(() => openOutboxDb().transaction((tx) => outboxTx.run(tx, work)));
}
async function outboxRowCount(): Promise<number> {
  return (await openOutboxDb().query<{ n: number }>('SELECT count(*)::int AS n FROM redis_lock_job_outbox')).rows[0].n;
}
/** Where a fenced upsert's and removal's deadline is among their keys and args ('' unfenced). */
const UPSERT_DEADLINE_AT = argAt(upsertRepeatScript, 'deadline');
const REMOVE_DEADLINE_AT = argAt(removeRepeatScript, 'deadline');

const outboxRows: LostReplyRow[] = [
  row({
    name: 'outbox job write: the write after COMMIT run twice stores one job, which runs once; the row is deleted',
    script: writeOutboxJobScript,
    get options() {
      return outboxOptions();
    },
    act: async (ctx) => {
      const id = await inOutboxTransaction(() => ctx.queue.schedule(TOPIC, { n: 1 }, { id: 'outboxed' }));
      await ctx.lost;
      await waitFor(async () => (await outboxRowCount()) === 0, 8_000, 'the row to be deleted');
      return id;
    },
    check: async (ctx, _state, id) => {
      expect(await runToEnd(ctx)).toEqual({ runs: [`${id}@1`], dead: [] });
    },
  }),
  row({
    name: 'outbox repeat (fenced upsert): the application after COMMIT run twice stores one schedule with one tick job; the row is deleted',
    script: upsertRepeatScript,
    where: (keysAndArgs) => (keysAndArgs[UPSERT_DEADLINE_AT] ?? '') !== '',
    get options() {
      return outboxOptions();
    },
    act: async (ctx) => {
      await inOutboxTransaction(() => ctx.queue.repeat(TOPIC, { every: 60_000 }, { id: 'outboxed', payload: { n: 3 } }));
      await ctx.lost;
      await waitFor(async () => (await outboxRowCount()) === 0, 8_000, 'the row to be deleted');
    },
    check: async (ctx) => {
      const listed = await ctx.peerQueue.listRepeats(TOPIC);
      expect(listed.map((info) => info.id)).toEqual(['outboxed']);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats({ scheduled: 1, schedules: 1 }));
      expect(await ctx.peerQueue.get(TOPIC, `repeat:outboxed@${listed[0].nextRunAt.getTime()}`)).toMatchObject({ payload: { n: 3 } });
    },
  }),
  row({
    name: 'outbox removeRepeat (fenced): the removal after COMMIT run twice removes the schedule and its waiting tick; the row is deleted',
    script: removeRepeatScript,
    where: (keysAndArgs) => keysAndArgs[REMOVE_DEADLINE_AT] !== '',
    get options() {
      return outboxOptions();
    },
    arrange: (ctx) => ctx.peerQueue.repeat(TOPIC, { every: 60_000 }, { id: 'outboxed' }),
    act: async (ctx) => {
      await inOutboxTransaction(() => ctx.queue.removeRepeat(TOPIC, 'outboxed'));
      await ctx.lost;
      await waitFor(async () => (await outboxRowCount()) === 0, 8_000, 'the row to be deleted');
    },
    check: async (ctx) => {
      expect(await ctx.peerQueue.listRepeats(TOPIC)).toEqual([]);
      expect(await ctx.peerQueue.stats(TOPIC)).toEqual(topicStats());
    },
  }),
];

/** Dead letters made through the API: jobs with one attempt whose handler throws. */
async function buryJobs(ctx: Omit<Ctx, 'lost'>, ids: string[]): Promise<void> {
  await ctx.peerQueue.scheduleMany(
    TOPIC,
    ids.map((id) => ({ payload: id, id, maxAttempts: 1 })),
  );
  const consumer = ctx.peerQueue.consume(TOPIC, () => {
    throw new Error('buried on purpose');
  });
  await waitFor(async () => (await ctx.peerQueue.stats(TOPIC)).dead === ids.length, 8_000, 'the dead letters');
  await consumer.close();
}

/** Runs the topic on the peer until nothing waits or runs; what ran (sorted) and what is dead. */
async function runToEnd(ctx: Ctx): Promise<{ runs: string[]; dead: string[] }> {
  const { consumer, runs } = recordingConsumer(ctx);
  await waitFor(() => drained(ctx), 8_000, 'the topic to drain');
  await consumer.close();
  return { runs: [...runs].sort(), dead: await deadIds(ctx) };
}

// ---- priorities ------------------------------------------------------------------------------

/** Jobs of TOPIC made ready for a claim by priority (the `prioritized` zset beside its jobs hash). */
async function readyCount(ctx: Omit<Ctx, 'lost'>): Promise<number> {
  return ctx.redis.zcard(ctx.keys.topic(TOPIC).prioritized);
}

/** A consumer on the proxied app, one job at a time, recording `id@attempt` in the order they start. */
function orderedConsumer(ctx: Ctx): { consumer: Consumer; runs: string[] } {
  const runs: string[] = [];
  const consumer = ctx.queue.consume(TOPIC, (_payload, job) => void runs.push(`${job.id}@${job.attempt}`), { concurrency: 1 });
  return { consumer, runs };
}

const priorityRows: LostReplyRow[] = [
  row({
    name: 'prioritised claim: a claim run twice delivers each job once, smaller priority first, and leaves none ready',
    script: claimDueJobsScript,
    options: { delayQueue: { maxAttempts: 1 } },
    arrange: (ctx) =>
      ctx.peerQueue.scheduleMany(TOPIC, [
        { payload: 3, id: 'p3', priority: 3 },
        { payload: 1, id: 'p1', priority: 1 },
        { payload: 2, id: 'p2', priority: 2 },
      ]),
    act: async (ctx) => {
      const { consumer, runs } = orderedConsumer(ctx);
      await ctx.lost;
      await waitFor(async () => runs.length >= 3 && (await drained(ctx)), 8_000, 'the jobs');
      await consumer.close();
      return runs;
    },
    check: async (ctx, _state, runs) => {
      expect({ runs, dead: await deadIds(ctx), ready: await readyCount(ctx) }).toEqual({
        runs: ['p1@1', 'p2@1', 'p3@1'],
        dead: [],
        ready: 0,
      });
    },
  }),
  row({
    name: 'prioritised scheduleMany: a batch run twice stores and makes ready each job once; they run once, by priority',
    script: scheduleJobsScript,
    act: async (ctx) => {
      await ctx.queue.scheduleMany(TOPIC, [
        { payload: 2, id: 'b2', priority: 2 },
        { payload: 0, id: 'b0' },
        { payload: 1, id: 'b1', priority: 1 },
      ]);
      return readyCount(ctx);
    },
    check: async (ctx, _state, ready) => {
      expect(ready).toBe(3);
      const { consumer, runs } = orderedConsumer(ctx);
      await waitFor(async () => runs.length >= 3 && (await drained(ctx)), 8_000, 'the batch');
      await consumer.close();
      expect({ runs, dead: await deadIds(ctx), ready: await readyCount(ctx) }).toEqual({
        runs: ['b0@1', 'b1@1', 'b2@1'],
        dead: [],
        ready: 0,
      });
    },
  }),
  row({
    name: 'prioritised fail: a failure record run twice makes the retry ready once, with its priority; it runs once more',
    script: failJobScript,
    options: { delayQueue: { maxAttempts: 3, backoff: { delay: 0, jitter: 0 } } },
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'pf', priority: 7 }),
    act: async (ctx) => {
      const attempts: number[] = [];
      const consumer = ctx.queue.consume(TOPIC, (_payload, job) => {
        attempts.push(job.attempt);
        if (job.attempt === 1) throw new Error('first attempt fails');
      });
      await ctx.lost;
      await waitFor(async () => attempts.length >= 2 && (await drained(ctx)), 8_000, 'the retry');
      await consumer.close();
      return attempts;
    },
    check: async (ctx, _state, attempts) => {
      expect({ attempts, dead: await deadIds(ctx), ready: await readyCount(ctx) }).toEqual({ attempts: [1, 2], dead: [], ready: 0 });
    },
  }),
  row({
    name: 'prioritised cancel: a cancel run twice answers true; the due job is gone and nothing of it stays ready',
    script: cancelJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'pc', priority: 4 }),
    act: async (ctx, id) => ({ readyBefore: await readyCount(ctx), existed: await ctx.queue.cancel(TOPIC, id) }),
    check: async (ctx, id, { readyBefore, existed }) => {
      expect({ readyBefore, existed, ready: await readyCount(ctx) }).toEqual({ readyBefore: 1, existed: true, ready: 0 });
      await expectGoneFromTopic(ctx, id);
    },
  }),
  row({
    name: 'prioritised reschedule: a due job moved later, run twice, is no longer ready; it runs once, not before its new time',
    script: rescheduleJobScript,
    arrange: (ctx) => ctx.peerQueue.schedule(TOPIC, 1, { id: 'pr', priority: 5 }),
    act: async (ctx, id) => {
      const sentAt = performance.now();
      const moved = await ctx.queue.reschedule(TOPIC, id, { delay: 400 });
      const ready = await readyCount(ctx);
      const recording = recordingConsumer(ctx);
      await waitFor(async () => recording.runs.length > 0 && (await drained(ctx)), 8_000, 'the moved job');
      await recording.consumer.close();
      return { moved, ready, sentAt, ...recording };
    },
    check: async (ctx, id, { moved, ready, sentAt, runs, startedAt }) => {
      expect({ moved, ready, runs, dead: await deadIds(ctx) }).toEqual({ moved: true, ready: 0, runs: [`${id}@1`], dead: [] });
      expect(startedAt.get(id)! - sentAt).toBeGreaterThanOrEqual(395);
    },
  }),
];

/** Scripts that only read: a lost reply and a re-send change nothing, so they have no row. */
const READ_ONLY_SCRIPTS: readonly ScriptRef[] = [
  readRepeatsScript,
  readJobScript,
  readDeadLettersScript,
  topicStatsScript,
  listJobsScript,
  readLockScript,
  readSemaphoreScript,
];

/** Every Lua script the lock kinds and delayed jobs define (each exported RedisScript of the kinds' folders and the jobs' script folder).
 * */
async function scriptsOfLibrary(): Promise<ScriptRef[]> {
  const folders = ['../../lib/lock/kinds', '../../lib/delay-queue/scripts'].map((folder) => join(import.meta.dirname, folder));
  const files = folders.flatMap((folder) =>
    (readdirSync(folder, { recursive: true }) as string[]).filter((file) => file.endsWith('.lua.ts')).map((file) => join(folder, file)),
  );
  const modules = await Promise.all(files.map((file) => import(file) as Promise<Record<string, unknown>>));
  return modules.flatMap((exports) => Object.values(exports)).filter((value): value is RedisScript => value instanceof RedisScript);
}

function scriptsOf(rows: readonly LostReplyRow[]): ScriptRef[] {
  return rows.flatMap((spec) => (Array.isArray(spec.script) ? spec.script : [spec.script as ScriptRef]));
}

describe('Lost reply + re-send, over every script-backed operation', () => {
  let harness: LostReplyHarness;

  beforeAll(async () => {
    harness = await LostReplyHarness.start([
      ...new Set([
        ...scriptsOf(lockRows),
        ...scriptsOf(jobRows),
        ...scriptsOf(priorityRows),
        ...scriptsOf(repeatRows),
        ...scriptsOf(restoreRows),
        ...scriptsOf(outboxRows),
        ...READ_ONLY_SCRIPTS,
      ]),
    ]);
  });
  afterAll(async () => {
    await harness.stop();
    await outboxDb?.close();
  });

  it('has a row for every script of the library that changes state', async () => {
    const covered = new Set(
      [
        ...scriptsOf(lockRows),
        ...scriptsOf(jobRows),
        ...scriptsOf(priorityRows),
        ...scriptsOf(repeatRows),
        ...scriptsOf(restoreRows),
        ...scriptsOf(outboxRows),
        ...READ_ONLY_SCRIPTS,
      ].map((script) => script.sha),
    );
    const library = await scriptsOfLibrary();
    expect(library.length).toBeGreaterThanOrEqual(25);
    expect(library.filter((script) => !covered.has(script.sha)).map((script) => script.name)).toEqual([]);
  });

  describe('locks', () => {
    it.each(lockRows.map((spec) => [spec.name, spec] as const))('%s', (_name, spec) => harness.run(spec), 30_000);
  });

  describe('jobs', () => {
    it.each(jobRows.map((spec) => [spec.name, spec] as const))('%s', (_name, spec) => harness.run(spec), 30_000);
  });

  describe('priorities', () => {
    it.each(priorityRows.map((spec) => [spec.name, spec] as const))('%s', (_name, spec) => harness.run(spec), 30_000);
  });

  describe('repeatable schedules', () => {
    it.each([...repeatRows, ...restoreRows].map((spec) => [spec.name, spec] as const))('%s', (_name, spec) => harness.run(spec), 60_000);
  });

  describe('transactional outbox', () => {
    beforeAll(startOutboxDb, 60_000);
    it.each(outboxRows.map((spec) => [spec.name, spec] as const))('%s', (_name, spec) => harness.run(spec), 30_000);
  });
});
