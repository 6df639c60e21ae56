import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  DelayQueueService,
  LeaderElection,
  LockService,
  RedisConnectionError,
  RedisLockModule,
  type LeadershipHooks,
  type LockHandle,
  type RedisLockModuleOptions,
} from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

/**
 * A call that failed with RedisConnectionError because Redis hung (SIGSTOP: the socket stays open,
 * the command was sent) has an unknown outcome: Redis runs the command when it resumes. What that
 * late run took must not stay taken by nobody: a lock try is undone, a claim's jobs reach a consumer.
 * Bounds are far below the leases (30 s) and the visibility timeout (30 s) a leftover would last.
 */
const HANG_MS = 3_000;
const LEASE_MS = 30_000;
const AFTER_RESUME_MS = 8_000;

async function app(url: string, prefix: string, providers: unknown[] = [], options: RedisLockModuleOptions = {}): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: url, keyPrefix: prefix, ...options })],
    providers: providers as never[],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

async function failsUnreachable(call: Promise<unknown>): Promise<void> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RedisConnectionError);
}

failOnUnhandledRejections({ after: 'each' });

describe('Redis hangs: a call that failed with RedisConnectionError leaves nothing taken by nobody', () => {
  let server: LocalRedisServer;
  const apps: TestingModule[] = [];
  beforeEach(async () => {
    server = await startLocalRedisServer();
  });
  afterEach(async () => {
    server.process.kill('SIGCONT');
    for (const a of apps.splice(0)) await a.close();
    await server.stop();
  });

  it('every lock kind a failed try targeted is free for another client soon after Redis resumes, not after the lease', async () => {
    const prefix = uniquePrefix('hang-lock');
    const a = await app(server.url, prefix);
    const b = await app(server.url, prefix);
    apps.push(a, b);
    const locks = a.get(LockService);
    const other = b.get(LockService);
    const lease = { leaseTime: LEASE_MS };
    // A re-entry inside a held section: only its own hold may be undone.
    const section = await locks.acquire('outer', lease);

    server.process.kill('SIGSTOP');
    try {
      await Promise.all([
        failsUnreachable(locks.tryAcquire('k1', lease)),
        failsUnreachable(locks.acquire('k2', lease)),
        failsUnreachable(locks.acquire('fair', { ...lease, fair: true })),
        failsUnreachable(locks.semaphore('sem', 1).tryAcquire(lease)),
        failsUnreachable(locks.semaphore('sem2', 1).acquire(lease)),
        failsUnreachable(locks.readWrite('rw').write(lease)),
        failsUnreachable(locks.readWrite('rw2').tryRead(lease)),
        failsUnreachable(locks.acquire(['m1', 'm2'], lease)),
        failsUnreachable(locks.runInScope(section, () => locks.acquire('outer', lease))),
      ]);
      await sleep(HANG_MS - 2_000);
    } finally {
      server.process.kill('SIGCONT');
    }
    const resumedAt = performance.now();

    await waitFor(
      async () => {
        const got = await Promise.all([
          other.tryAcquire('k1'),
          other.tryAcquire('k2'),
          other.tryAcquire('fair', { fair: true }),
          other.semaphore('sem', 1).tryAcquire(),
          other.semaphore('sem2', 1).tryAcquire(),
          other.readWrite('rw').tryWrite(),
          other.readWrite('rw2').tryWrite(),
          other.tryAcquire(['m1', 'm2']),
        ]);
        await Promise.all(got.map((h) => h?.release()));
        return got.every((h) => h !== null);
      },
      AFTER_RESUME_MS,
      'every lock a failed try targeted to be free for another client',
      { retryErrors: true, every: 100 },
    );
    expect(performance.now() - resumedAt).toBeLessThan(AFTER_RESUME_MS);

    // The section still holds its lock, once: one release frees it.
    expect(section.held).toBe(true);
    await section.release();
    const after = await other.tryAcquire('outer');
    expect(after).not.toBeNull();
    await after?.release();
  }, 60_000);

  it(
    'jobs that fell due during the hang run on their first attempt soon after Redis resumes, not after ' + 'the visibility timeout',
    async () => {
      const prefix = uniquePrefix('hang-claim');
      const a = await app(server.url, prefix);
      const b = await app(server.url, prefix);
      apps.push(a, b);
      const ran: Array<{ n: number; attempt: number }> = [];
      for (const x of [a, b]) {
        x.get(DelayQueueService).consume<{ n: number }>(
          'hang.t',
          (payload, job) => {
            ran.push({ n: payload.n, attempt: job.attempt });
          },
          { concurrency: 2, visibilityTimeout: LEASE_MS },
        );
      }
      const queue = a.get(DelayQueueService);
      const base = Date.now() + 1_000;
      for (let n = 0; n < 8; n++) await queue.schedule('hang.t', { n }, { at: base + n * 200 });
      const wait = base - 300 - Date.now();
      if (wait > 0) await sleep(wait);

      server.process.kill('SIGSTOP');
      await sleep(HANG_MS);
      server.process.kill('SIGCONT');
      const resumedAt = performance.now();

      await waitFor(() => ran.length >= 8, AFTER_RESUME_MS, 'the 8 jobs to run', { every: 50 });
      expect(performance.now() - resumedAt).toBeLessThan(AFTER_RESUME_MS);
      expect(ran.filter((r) => r.attempt !== 1)).toEqual([]);
    },
    60_000,
  );

  it('a leader is elected again soon after Redis resumes, not a ttl later', async () => {
    const TTL = 10_000;
    const leading = new Map<string, LockHandle>();
    const lost = new Set<string>();
    function candidate(name: string) {
      @Injectable()
      @LeaderElection('hang-leader', { ttl: TTL })
      class Candidate implements LeadershipHooks {
        onLeadershipAcquired(lock: LockHandle): void {
          leading.set(name, lock);
        }
        onLeadershipLost(): void {
          leading.delete(name);
          lost.add(name);
        }
      }
      return Candidate;
    }
    const prefix = uniquePrefix('hang-leader');
    const a = await app(server.url, prefix, [candidate('A')]);
    apps.push(a);
    await waitFor(() => leading.has('A'), 10_000, 'A to lead');
    const b = await app(server.url, prefix, [candidate('B')]);
    apps.push(b);
    await sleep(1_000);

    // Hung past the ttl: the leader's lease ends in Redis and in the leader; campaigns meet the hang.
    server.process.kill('SIGSTOP');
    try {
      await waitFor(() => lost.has('A'), 3 * TTL, 'A to lose its leadership');
      await sleep(1_000);
    } finally {
      server.process.kill('SIGCONT');
    }
    const resumedAt = performance.now();
    await waitFor(() => [...leading.values()].some((l) => l.held), 2 * TTL, 'a leader after Redis resumed', { every: 50 });
    expect(performance.now() - resumedAt).toBeLessThan(TTL / 2);
  }, 120_000);
});
