import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockService, type LockHandle } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { errorMessage } from '../../lib/core/errors/error-message.js';
import { createRedisLockTestingModule, uniqueKeyPrefix } from '../../lib/testing/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { holdsWithin, sleep } from '../support/timing.js';
import { UnhandledRejections } from '../support/unhandled-rejections.js';
import { FenceHistory, seededRandom, type FenceGrant, type GrantKind } from './fence-history.js';

/**
 * Fencing tokens never repeat nor go back for a key while Redis loses its counters for real, not by
 * a DEL in a spec: clients of every lock kind take random keys while the harness, on a private
 * redis-server, runs FLUSHALL, SHUTDOWN NOSAVE and a restart without persistence on the same port,
 * and evicts keys (a small `maxmemory` with `allkeys-lru`, filled with junk). Every token handed out
 * is recorded with its key and when it was asked for and granted; the checker (fence-history.ts)
 * asserts that each grant that starts a hold is above every token of its key granted before it was
 * asked for, that a reader joining a read phase or a re-entry is not below any, and that no token
 * of a key is handed out twice.
 */
describe('fencing tokens under real Redis faults', () => {
  const SEED = Number(process.env.FENCE_FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const MAXMEMORY = 8 * 1024 * 1024;
  const LEASE = 2_000;
  const unhandled = new UnhandledRejections();
  let server: LocalRedisServer;
  const apps: TestingModule[] = [];
  let admin: Redis;
  let evictions: Redis;
  const warnings: string[] = [];

  beforeAll(async () => {
    unhandled.start();
    // The library's warnings (the eviction policy, lost holds) are expected here: kept, not printed.
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    server = await startLocalRedisServer({
      args: ['--maxmemory', String(MAXMEMORY), '--maxmemory-policy', 'allkeys-lru', '--notify-keyspace-events', 'Ee'],
    });
    admin = new Redis(server.url, { maxRetriesPerRequest: 3 });
    admin.on('error', () => undefined);
    evictions = new Redis(server.url);
    evictions.on('error', () => undefined);
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    admin?.disconnect();
    evictions?.disconnect();
    await server?.stop();
    unhandled.stop();
    jest.restoreAllMocks();
  });

  it(
    'every fresh grant of a key is above every token it had before, through FLUSHALL, restarts without ' + 'persistence and eviction',
    async () => {
      const keyPrefix = uniqueKeyPrefix('fence-faults');
      const keys = new RedisKeySpace(keyPrefix);
      // Exclusive names (plain, fair, re-entrant, multi-key), read/write names, semaphores: more
      // names than the clients touch each second, so some counters sit idle and are what allkeys-lru
      // evicts first.
      const exclusive = Array.from({ length: 10 }, (_, i) => `x${i}`);
      const readWrite = Array.from({ length: 6 }, (_, i) => `rw${i}`);
      const semaphores = Array.from({ length: 6 }, (_, i) => `s${i}`);
      const nameOfFence = new Map<string, string>([
        ...[...exclusive, ...readWrite].map((name) => [keys.lock(name).fence, name] as const),
        ...semaphores.map((name) => [keys.semaphore(name).fence, name] as const),
      ]);

      const evicted: Array<{ key: string; at: number }> = [];
      evictions.on('message', (_channel: string, key: string) => evicted.push({ key, at: performance.now() }));
      await evictions.subscribe('__keyevent@0__:evicted');

      for (let i = 0; i < 3; i++) {
        const builder = createRedisLockTestingModule({
          redis: server.url,
          redisLock: { keyPrefix, evictionPolicyCheck: 'warn', lock: { leaseTime: LEASE, waitTimeout: 3_000 } },
        });
        apps.push(await (await builder.compile()).init());
      }
      // The bootstrap check saw allkeys-lru and, told to warn instead of refusing, said so.
      expect(warnings.some((w) => w.includes('maxmemory-policy') && w.includes('allkeys-lru'))).toBe(true);
      const services = apps.map((app) => app.get(LockService));

      const history = new FenceHistory();
      const outcomes = { granted: 0, failed: 0, errors: new Map<string, number>() };
      let running = true;

      const pick = <T>(next: () => number, list: readonly T[]): T => list[Math.floor(next() * list.length)];
      const hold = async (next: () => number, handle: LockHandle) => {
        await sleep(Math.floor(next() * 15));
        await handle.release().catch(() => undefined);
      };

      type Operation = (locks: LockService, next: () => number, who: string) => Promise<void>;
      const take = <T extends LockHandle | null>(who: string, what: string, kind: GrantKind, acquire: () => Promise<T>) =>
        history.take(`${who} ${what}`, kind, acquire);
      const operations: Operation[] = [
        async (locks, next, who) => {
          const name = pick(next, exclusive);
          await hold(next, await take(who, `plain ${name}`, 'fresh', () => locks.acquire(name)));
        },
        async (locks, next, who) => {
          const name = pick(next, exclusive);
          const handle = await take(who, `tryAcquire ${name}`, 'fresh', () => locks.tryAcquire(name));
          if (handle) await hold(next, handle);
        },
        async (locks, next, who) => {
          const name = pick(next, exclusive);
          await hold(next, await take(who, `fair ${name}`, 'fresh', () => locks.acquire(name, { fair: true })));
        },
        async (locks, next, who) => {
          const name = pick(next, exclusive);
          const askedAt = performance.now();
          await locks.using(name, async (outer) => {
            history.record(name, outer.fencingToken, 'fresh', askedAt, performance.now(), `${who} section ${name}`);
            await hold(next, await take(who, `re-entry ${name}`, 'joined', () => locks.acquire(name)));
          });
        },
        async (locks, next, who) => {
          const first = pick(next, exclusive);
          const second = pick(
            next,
            exclusive.filter((n) => n !== first),
          );
          await hold(next, await take(who, `multi ${first}+${second}`, 'fresh', () => locks.acquire([first, second])));
        },
        async (locks, next, who) => {
          const name = pick(next, readWrite);
          await hold(next, await take(who, `read ${name}`, 'joined', () => locks.readWrite(name).read()));
        },
        async (locks, next, who) => {
          const name = pick(next, readWrite);
          await hold(next, await take(who, `write ${name}`, 'fresh', () => locks.readWrite(name).write()));
        },
        async (locks, next, who) => {
          const name = pick(next, semaphores);
          await hold(next, await take(who, `permit ${name}`, 'fresh', () => locks.semaphore(name, 2).acquire()));
        },
      ];

      const client = async (locks: LockService, seed: number, who: string) => {
        const next = seededRandom(seed);
        while (running) {
          try {
            await pick(next, operations)(locks, next, who);
            outcomes.granted++;
          } catch (error) {
            // Faults make acquires time out, find Redis gone, or find their section's hold lost.
            outcomes.failed++;
            const name = error instanceof Error ? error.constructor.name : 'non-error';
            outcomes.errors.set(name, (outcomes.errors.get(name) ?? 0) + 1);
            await sleep(5);
          }
        }
      };

      const clients = services.flatMap((locks, s) => [0, 1, 2].map((w) => client(locks, SEED + 31 * s + w, `app${s}.w${w}`)));

      const grantsSoFar = () => history.grants.length;
      const traffic = async (phase: string, ms: number) => {
        history.phase = phase;
        const before = grantsSoFar();
        await sleep(ms);
        // The clients got grants in it (Redis back, connections restored); asserted per phase below.
        await holdsWithin(() => grantsSoFar() >= before + 20, 20_000);
      };

      const flushAll = async (round: number) => {
        expect(await admin.flushall()).toBe('OK');
        await traffic(`after FLUSHALL #${round}`, 2_000);
      };
      const restartWithoutPersistence = async (round: number) => {
        await admin.set('written-before-the-restart', '1');
        const exited = new Promise<void>((resolve) => server.process.once('exit', () => resolve()));
        // redis-cli, not a client that re-sends an unanswered command to the restarted server.
        const shutdown = await runRedisCli(server.port, ['SHUTDOWN', 'NOSAVE']);
        await exited;
        expect(shutdown.code === 0 || shutdown.output.includes('closed')).toBe(true);
        history.phase = `Redis down #${round}`;
        await server.restart({ downtimeMs: 300 });
        expect(await admin.exists('written-before-the-restart')).toBe(0); // no persistence: nothing came back
        await traffic(`after restart #${round}`, 2_500);
      };
      const evict = async (round: number) => {
        history.phase = `eviction #${round}`;
        const evictedBefore = evictedKeys(await admin.info('stats'));
        const junk = 'j'.repeat(64 * 1024);
        // Three times maxmemory of junk, over about two seconds of the LRU clock (1 s resolution):
        // older keys (idle counters first) are evicted to make room.
        for (let i = 0; i < (3 * MAXMEMORY) / junk.length; i++) {
          await admin.set(`junk:${round}:${i}`, junk).catch(() => undefined);
          if (i % 16 === 15) await sleep(100);
        }
        expect(evictedKeys(await admin.info('stats'))).toBeGreaterThan(evictedBefore);
        await traffic(`after eviction #${round}`, 2_000);
      };

      await traffic('start', 2_000);
      for (const round of [1, 2]) {
        await flushAll(round);
        await restartWithoutPersistence(round);
        await evict(round);
      }
      running = false;
      await Promise.all(clients);

      const counts = history.countByPhase();
      const evictedCounters = evicted.filter((e) => nameOfFence.has(e.key));
      // A counter evicted and then granted again: the case the eviction phase is for.
      const regrantedAfterEviction = evictedCounters.filter((e) =>
        history.grants.some((g: FenceGrant) => g.key === nameOfFence.get(e.key) && g.kind === 'fresh' && g.askedAt > e.at),
      ).length;
      console.log(
        `Fences under faults (seed ${SEED}): ${history.grants.length} tokens recorded, ` +
          `${outcomes.granted} operations done, ${outcomes.failed} failed (${JSON.stringify(Object.fromEntries(outcomes.errors))}); ` +
          `per phase ${JSON.stringify(counts)}; evicted keys ${evicted.length}, of them fencing counters ${evictedCounters.length}, ` +
          `granted again after their eviction ${regrantedAfterEviction}`,
      );

      expect(history.violations()).toEqual([]);
      // Not vacuous: grants after every fault, and counters really evicted and granted again.
      const phases = [
        'start',
        'after FLUSHALL #1',
        'after restart #1',
        'after eviction #1',
        'after FLUSHALL #2',
        'after restart #2',
        'after eviction #2',
      ];
      expect(phases.filter((phase) => (counts[phase] ?? 0) < 20)).toEqual([]);
      expect(evictedCounters.length).toBeGreaterThan(0);
      expect(regrantedAfterEviction).toBeGreaterThan(0);
      expect(unhandled.reasons.map(errorMessage)).toEqual([]);
    },
    180_000,
  );

  it('the checker finds a token that went back, one repeated, and one that is not a 53-bit integer', () => {
    const history = new FenceHistory();
    history.record('k', '100', 'fresh', 0, 1, 'a');
    history.record('k', '100', 'fresh', 2, 3, 'b'); // asked after a's grant: must be above it
    history.record('k', '150', 'fresh', 4, 5, 'c');
    history.record('k', '120', 'joined', 6, 7, 'd'); // below c's, granted before it asked
    history.record('k', '150', 'joined', 8, 9, 'e'); // shares c's token: allowed
    history.record('k', String(2n ** 53n), 'fresh', 10, 11, 'f');
    history.record('r', '7', 'fresh', 0, 5, 'g');
    history.record('r', '7', 'fresh', 1, 4, 'h'); // overlapping in time, still a repeat
    const found = history.violations();
    expect(found).toEqual([
      'malformed: k: f got "9007199254740992"',
      expect.stringMatching(/^went-back: k: b .* got 100, but a .* had been granted 100/),
      expect.stringMatching(/^went-back: k: d .* got 120, but c .* had been granted 150/),
      expect.stringMatching(/^repeated: k: a .* and b .* both got 100/),
      expect.stringMatching(/^repeated: r: g .* and h .* both got 7/),
    ]);
  });
});

/** `evicted_keys` from INFO stats. */
function evictedKeys(info: string): number {
  return Number(/evicted_keys:(\d+)/.exec(info)?.[1] ?? 0);
}

/** Runs redis-cli against the server; resolves with its exit code and output. */
async function runRedisCli(port: number, args: string[]): Promise<{ code: number | null; output: string }> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn('redis-cli', ['-p', String(port), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}
