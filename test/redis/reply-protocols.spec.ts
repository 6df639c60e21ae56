import { jest } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Test, type TestingModule } from '@nestjs/testing';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import {
  DelayQueueService,
  InvalidOptionsError,
  LockService,
  RedisEvictionPolicyError,
  RedisLockModule,
  type JobContext,
  type LockHandle,
  type RedisLockModuleOptions,
} from '../../lib/index.js';
import { readEvictionPolicies } from '../../lib/core/redis/eviction-policy-check.js';
import { everyMasterOf } from '../../lib/core/redis/ioredis-maintenance.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { initOrCloseConnections, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { WAITING_MARK } from '../../lib/lock/protocols/lua-snippets.js';
import { topicStats } from '../support/topic-stats.js';

/*
 * ioredis 6 speaks RESP3 by default; ioredis 5 (still in the peer range) speaks RESP2. A client
 * the user hands in may use either, and with RESP3 either reply mapping. The library must read
 * every reply the same way on all of them: its scripts return only types whose value does not
 * depend on the protocol, and the one command whose shape does (CONFIG GET) is read in both
 * shapes. Settings it cannot work with (`stringNumbers`, a client `keyPrefix`) are refused at
 * bootstrap. See docs/redis-protocols.md.
 */

const increasing = (tokens: string[]) => tokens.every((t, i) => i === 0 || BigInt(t) > BigInt(tokens[i - 1]));

interface ProtocolCase {
  readonly name: string;
  readonly options: RedisOptions;
  /** The `resp=` Redis reports for the connection. */
  readonly resp: 2 | 3;
}

const PROTOCOLS: ProtocolCase[] = [
  { name: 'protocol 2 (RESP2, what ioredis 5 speaks)', options: { protocol: 2 }, resp: 2 },
  { name: "protocol 3 with replyMapping 'legacy' (ioredis 6's default)", options: {}, resp: 3 },
  { name: "protocol 3 with replyMapping 'resp3'", options: { protocol: 3, replyMapping: 'resp3' }, resp: 3 },
];

failOnUnhandledRejections();

describe('Redis reply protocols', () => {
  let evictingNoInfo: LocalRedisServer;
  let evictingNoConfig: LocalRedisServer;

  beforeAll(async () => {
    // Dead letters are logged as errors, and bootstrap refusals as well; these specs cause both.
    muteNestLogger('error');
    // The eviction policy through CONFIG GET only (INFO renamed away) and through INFO only.
    [evictingNoInfo, evictingNoConfig] = await Promise.all([
      startLocalRedisServer({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru', '--rename-command', 'INFO', ''] }),
      startLocalRedisServer({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-ttl', '--rename-command', 'CONFIG', ''] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([evictingNoInfo?.stop(), evictingNoConfig?.stop()]);
    jest.restoreAllMocks();
  });

  /** Compiles and initialises a module; on failure closes what it opened and rethrows. */
  async function bootstrap(options: RedisLockModuleOptions): Promise<TestingModule> {
    const app = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ keyPrefix: uniquePrefix('rp'), ...options })],
    }).compile();
    return initOrCloseConnections(app);
  }

  describe.each(PROTOCOLS)('a client with $name', ({ options, resp }) => {
    const connectionName = `rp-${resp}-${uniquePrefix('c')}`;
    const clients: Redis[] = [];
    const apps: TestingModule[] = [];
    let a: LockService;
    let b: LockService;
    let queue: DelayQueueService;
    let raw: Redis;
    let keyPrefix: string;

    const client = (extra: RedisOptions = {}, url = testRedisUrl()): Redis => {
      const created = new Redis(url, { connectionName, ...options, ...extra });
      created.on('error', () => undefined);
      clients.push(created);
      return created;
    };

    beforeAll(async () => {
      keyPrefix = uniquePrefix('rp');
      const common = {
        keyPrefix,
        lock: { leaseTime: 1_500 },
        delayQueue: { backoff: { delay: 50, factor: 1, jitter: 0 }, maxAttempts: 2 },
      };
      apps.push(await bootstrap({ ...common, redis: { client: client() } }));
      apps.push(await bootstrap({ ...common, redis: { client: client() } }));
      [a, b] = apps.map((app) => app.get(LockService));
      queue = apps[0].get(DelayQueueService);
      raw = new Redis(testRedisUrl());
    });
    afterAll(async () => {
      await Promise.all(apps.map((app) => app.close()));
      for (const c of clients) c.disconnect();
      raw?.disconnect();
    });

    it('really runs on that protocol', async () => {
      const info = String(await clients[0].call('CLIENT', 'INFO'));
      expect(info).toMatch(new RegExp(`\\bresp=${resp}\\b`));
    });

    it('plain locks: tokens grow, tryAcquire sees contention, extend and release work, a waiter is woken', async () => {
      const tokens: string[] = [];
      const first = await a.acquire('plain', { leaseTime: 30_000 });
      tokens.push(first.fencingToken);
      expect(first.fencingToken).toMatch(/^\d+$/);
      expect(await b.tryAcquire('plain')).toBeNull();
      expect(await b.isLocked('plain')).toBe(true);
      await first.extend(40_000);
      expect(await raw.pttl(new RedisKeySpace(keyPrefix).lock('plain').owners)).toBeGreaterThan(30_000);
      // The waiter is woken by the release message, long before the 40 s lease would free the lock.
      const started = performance.now();
      const waiting = b.acquire('plain', { waitTimeout: 20_000 });
      // Refused, the waiter marks the lock as awaited and parks.
      await waitFor(
        async () => (await raw.hexists(new RedisKeySpace(keyPrefix).lock('plain').owners, WAITING_MARK)) === 1,
        10_000,
        'the waiter to park',
      );
      await first.release();
      const second = await waiting;
      expect(performance.now() - started).toBeLessThan(10_000);
      tokens.push(second.fencingToken);
      await second.release();
      expect(await a.isLocked('plain')).toBe(false);
      const third = await a.tryAcquire('plain');
      expect(third).not.toBeNull();
      tokens.push(third!.fencingToken);
      await third!.release();
      expect(increasing(tokens)).toBe(true);
    });

    it('re-entry in a lock section gets the same token, and the watchdog keeps renewing', async () => {
      await a.using('section', async (outer) => {
        const inner = await a.acquire('section');
        expect(inner.fencingToken).toBe(outer.fencingToken);
        await inner.release();
        await sleep(3_500); // more than two leases of 1.5 s: renewed by the watchdog
        expect(outer.held).toBe(true);
        expect(await b.tryAcquire('section')).toBeNull();
      });
      expect(await b.isLocked('section')).toBe(false);
    });

    it('fair locks: FIFO hand-over to named waiters, tokens grow', async () => {
      const order: string[] = [];
      const tokens: string[] = [];
      const holder = await a.acquire('fair', { fair: true, leaseTime: 30_000 });
      tokens.push(holder.fencingToken);
      expect(await b.tryAcquire('fair', { fair: true })).toBeNull();
      const queued = async (n: number) => (await raw.llen(new RedisKeySpace(keyPrefix).lock('fair').queue)) === n;
      const waiters: Array<Promise<void>> = [];
      for (const label of ['b1', 'b2']) {
        waiters.push(
          (async () => {
            const lock = await b.acquire('fair', { fair: true, waitTimeout: 20_000, leaseTime: 30_000 });
            order.push(label);
            tokens.push(lock.fencingToken);
            await lock.release();
          })(),
        );
        await waitFor(() => queued(waiters.length), 10_000, `${label} to queue`);
      }
      await holder.release();
      await Promise.all(waiters);
      expect(order).toEqual(['b1', 'b2']);
      expect(increasing(tokens)).toBe(true);
    });

    it('read/write locks: readers share, a writer waits for them and gets a higher token', async () => {
      const readers = [await a.readWrite('rw').read({ leaseTime: 30_000 }), await b.readWrite('rw').read({ leaseTime: 30_000 })];
      expect(await b.readWrite('rw').tryWrite()).toBeNull();
      const third = await b.readWrite('rw').tryRead();
      expect(third).not.toBeNull();
      await third!.release();
      const writing = a.readWrite('rw').write({ waitTimeout: 20_000 });
      let wrote: LockHandle | undefined;
      void writing.then((w) => (wrote = w));
      await sleep(200);
      expect(wrote).toBeUndefined();
      for (const reader of readers) await reader.release();
      const writer = await writing;
      expect(BigInt(writer.fencingToken)).toBeGreaterThan(BigInt(readers[0].fencingToken));
      await writer.extend(5_000);
      await writer.release();
    });

    it('semaphores: at most `permits` holders, a released permit goes to the next, tokens differ', async () => {
      const permits = [await a.semaphore('sem', 2).acquire(), await b.semaphore('sem', 2).acquire()];
      expect(await a.semaphore('sem', 2).tryAcquire()).toBeNull();
      await permits[0].extend(5_000);
      const waiting = b.semaphore('sem', 2).acquire({ waitTimeout: 20_000 });
      await sleep(100);
      await permits[0].release();
      const third = await waiting;
      expect(new Set([...permits, third].map((p) => p.fencingToken)).size).toBe(3);
      await Promise.all([permits[1].release(), third.release()]);
      const again = await a.semaphore('sem', 2).tryAcquire();
      expect(again).not.toBeNull();
      await again!.release();
    });

    it('delayed jobs: schedule, get, handle, acknowledge, stats', async () => {
      const id = await queue.schedule('ok', { n: 1 }, { delay: 60_000, id: 'job-1' });
      expect(id).toBe('job-1');
      const stored = await queue.get('ok', id);
      expect(stored).toMatchObject({ id, state: 'scheduled', attempts: 0, payload: { n: 1 } });
      expect(stored!.scheduledAt).toBeInstanceOf(Date);
      expect(await queue.stats('ok')).toEqual(topicStats({ scheduled: 1 }));
      expect(await queue.reschedule('ok', id, { delay: 100 })).toBe(true);

      const handled = deferred<{ payload: unknown; job: JobContext }>();
      const consumer = queue.consume('ok', (payload, job) => handled.resolve({ payload, job }));
      const { payload, job } = await handled.promise;
      expect(payload).toEqual({ n: 1 });
      expect(job).toMatchObject({ id, attempt: 1 });
      await waitFor(async () => (await queue.get('ok', id)) === null, 10_000, 'the acknowledgement');
      expect(await queue.stats('ok')).toEqual(topicStats());

      const cancelled = await queue.schedule('ok', { n: 2 }, { delay: 60_000 });
      expect(await queue.cancel('ok', cancelled)).toBe(true);
      expect(await queue.cancel('ok', cancelled)).toBe(false);
      await consumer.close();
    });

    it('delayed jobs: a failing job goes to the dead letters after its attempts, and retryDead brings it back', async () => {
      const attempts: number[] = [];
      const failing = queue.consume('fails', (_payload, job) => {
        attempts.push(job.attempt);
        throw new Error(`boom ${job.attempt}`);
      });
      const id = await queue.schedule('fails', { n: 3 });
      await waitFor(async () => (await queue.stats('fails')).dead === 1, 15_000, 'the job to die');
      await failing.close();
      expect(attempts).toEqual([1, 2]);
      expect(await queue.stats('fails')).toEqual(topicStats({ dead: 1 }));
      const [dead] = await queue.deadLetters('fails');
      expect(dead).toMatchObject({ id, state: 'dead', attempts: 2, payload: { n: 3 } });
      expect(dead.diedAt).toBeInstanceOf(Date);
      expect(dead.lastError).toMatch(/boom 2/);
      expect((await queue.get('fails', id))?.state).toBe('dead');

      expect(await queue.retryDead('fails', id)).toBe(1);
      const again = deferred<JobContext>();
      const fixed = queue.consume('fails', (_payload, job) => again.resolve(job));
      expect((await again.promise).attempt).toBe(1);
      await waitFor(async () => (await queue.stats('fails')).active === 0, 10_000, 'the acknowledgement');
      expect(await queue.stats('fails')).toEqual(topicStats());
      await fixed.close();
    });

    it('reads the eviction policy through CONFIG GET and through INFO', async () => {
      expect(await readEvictionPolicies(everyMasterOf(clients[0]), 5_000)).toEqual([
        { endpoint: expect.any(String), policy: 'noeviction' },
      ]);
      // INFO renamed away: ioredis' ready check (INFO) has to be off.
      const viaConfig = client({ enableReadyCheck: false }, evictingNoInfo.url);
      const viaInfo = client({}, evictingNoConfig.url);
      expect((await readEvictionPolicies(everyMasterOf(viaConfig), 5_000))[0].policy).toBe('allkeys-lru');
      expect((await readEvictionPolicies(everyMasterOf(viaInfo), 5_000))[0].policy).toBe('volatile-ttl');

      const refused = await bootstrap({ redis: { client: viaConfig } }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RedisEvictionPolicyError);
      expect(refused).toMatchObject({ code: 'REDIS_EVICTION_POLICY', policy: 'allkeys-lru' });
    });

    it("gives the module's own connections (subscriber, blocking reader) the same protocol", async () => {
      // Earlier tests waited on locks (subscriber) and consumed jobs (blocking reader).
      const list = String(await raw.call('CLIENT', 'LIST'))
        .split('\n')
        .filter((line) => line.includes(` name=${connectionName} `));
      expect(list.length).toBeGreaterThanOrEqual(4);
      for (const line of list) expect(line).toMatch(new RegExp(`\\bresp=${resp}\\b`));
    });
  });

  describe('client settings the module cannot work with are refused at bootstrap', () => {
    const clients: Array<Redis | Cluster> = [];
    afterAll(() => clients.forEach((c) => c.disconnect()));
    const url = new URL(testRedisUrl());
    const at = { host: url.hostname, port: Number(url.port) };

    const expectRefusal = (error: unknown, option: string, setting: 'stringNumbers' | 'keyPrefix') => {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect(error).toMatchObject({ code: 'INVALID_OPTIONS', option });
      expect((error as Error).message).toContain(setting);
    };

    it('stringNumbers on a client passed in, naming the option and how to keep it for your own commands', async () => {
      const mine = new Redis(testRedisUrl(), { lazyConnect: true, stringNumbers: true });
      clients.push(mine);
      const error = await bootstrap({ redis: { client: mine } }).catch((e: unknown) => e);
      expectRefusal(error, 'redis.client', 'stringNumbers');
      expect((error as Error).message).toContain('client.duplicate({ stringNumbers: false })');
      // The user's client is left alone: never connected, never closed by the module.
      expect(mine.status).toBe('wait');
    });

    it('stringNumbers in connection options, with no connection left open', async () => {
      const connectionName = uniquePrefix('refused');
      const error = await bootstrap({ redis: { ...at, stringNumbers: true, connectionName } }).catch((e: unknown) => e);
      expectRefusal(error, 'redis.stringNumbers', 'stringNumbers');
      const observer = new Redis(testRedisUrl());
      clients.push(observer);
      await sleep(200);
      expect(String(await observer.call('CLIENT', 'LIST'))).not.toContain(`name=${connectionName}`);
    });

    it('stringNumbers on a cluster client passed in', async () => {
      const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true, redisOptions: { stringNumbers: true } });
      clients.push(cluster);
      const error = await bootstrap({ redis: { client: cluster } }).catch((e: unknown) => e);
      expectRefusal(error, 'redis.client', 'stringNumbers');
      expect((error as Error).message).toContain('cluster.duplicate([]');
    });

    it('stringNumbers on a Redlock master', async () => {
      const master = new Redis(testRedisUrl(), { lazyConnect: true, stringNumbers: true });
      clients.push(master);
      const error = await bootstrap({ redis: testRedisUrl(), redlock: { clients: [master] } }).catch((e: unknown) => e);
      expectRefusal(error, 'redlock.clients[0]', 'stringNumbers');
    });

    it(
      'keyPrefix on a client passed in (channels are not prefixed: waiters would never be woken), pointing ' + "to the module's keyPrefix",
      async () => {
        const mine = new Redis(testRedisUrl(), { lazyConnect: true, keyPrefix: 'app:' });
        clients.push(mine);
        const error = await bootstrap({ redis: { client: mine } }).catch((e: unknown) => e);
        expectRefusal(error, 'redis.client', 'keyPrefix');
        expect((error as Error).message).toContain('"app:"');
        expect((error as Error).message).toContain("client.duplicate({ keyPrefix: '' })");
      },
    );

    it('keyPrefix in connection options, in cluster options and on a Redlock master built from options', async () => {
      expectRefusal(await bootstrap({ redis: { ...at, keyPrefix: 'app:' } }).catch((e: unknown) => e), 'redis.keyPrefix', 'keyPrefix');
      const cluster = { cluster: [{ host: '127.0.0.1', port: 1 }], options: { keyPrefix: 'app:' } };
      expectRefusal(await bootstrap({ redis: cluster }).catch((e: unknown) => e), 'redis.options.keyPrefix', 'keyPrefix');
      const redlock = { clients: [{ ...at, keyPrefix: 'app:' }] };
      expectRefusal(
        await bootstrap({ redis: testRedisUrl(), redlock }).catch((e: unknown) => e),
        'redlock.clients[0].keyPrefix',
        'keyPrefix',
      );
    });
  });

  describe('every Lua script returns values whose shape does not depend on the protocol', () => {
    const root = join(import.meta.dirname, '../../lib');
    const scriptFiles = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return scriptFiles(path);
        return /\.lua\.ts$|lua-snippets\.ts$/.test(entry.name) ? [path] : [];
      });
    const files = scriptFiles(root);

    it('finds the scripts', () => {
      expect(files.length).toBeGreaterThan(20);
    });

    // Under RESP3 these reach the client as RESP3 types (double, map, set, big number, boolean),
    // which ioredis 6 maps differently with replyMapping 'resp3'; `redis.setresp(3)` would also
    // make Lua `false` a RESP3 boolean instead of nil. None of them is used.
    const RESP3_SENSITIVE = [/redis\.setresp/, /\bdouble\s*=/, /\bmap\s*=/, /\bset\s*=\s*\{/, /\bbig_number\s*=/, /\bverbatim_string\s*=/];
    it.each(files.map((f) => [relative(root, f), f]))('%s', (_name, file) => {
      const source = readFileSync(file, 'utf8');
      const found = RESP3_SENSITIVE.map((pattern) => pattern.exec(source)?.[0]).filter((match) => match !== undefined);
      expect(found).toEqual([]);
    });
  });
});
