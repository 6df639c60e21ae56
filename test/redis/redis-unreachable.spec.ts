import { Test, type TestingModule } from '@nestjs/testing';
import {
  DelayQueueService,
  LockService,
  RedisConnectionError,
  RedisLockModule,
  type LockHandle,
  type RedisLockModuleOptions,
} from '../../lib/index.js';
import { startLocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { OrdersController, PaymentsService, Probe } from '../fixtures/with-lock-http.js';
import { uniquePrefix } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { useAppOnLocalRedis } from '../support/use-local-redis-server.js';
import { listenHttpApp } from '../support/use-http-app.js';

/**
 * The operations contract when Redis becomes unreachable: with the module's defaults every lock and
 * queue call settles within about 2 s with `RedisConnectionError` naming the cause, never a
 * contention error. The bound asserted here (4 s from the fault) leaves room for a loaded machine and
 * still fails the 15-24 s the client's retry budget used to take.
 */
const BOUND_MS = 4_000;

/** What one call did, measured from the fault. */
interface Settled {
  readonly name: string;
  readonly ms: number;
  readonly error: unknown;
}

async function lockApp(url: string, options: RedisLockModuleOptions = {}): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: url, keyPrefix: uniquePrefix('down'), ...options })],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

/** Prepared state: locks held and a waiter parked before the fault. */
interface Before {
  readonly held: LockHandle;
  readonly extended: LockHandle;
  readonly waiting: Promise<LockHandle>;
}

async function prepare(app: TestingModule): Promise<Before> {
  const locks = app.get(LockService);
  const queue = app.get(DelayQueueService);
  await queue.schedule('down.topic', { n: 0 }, { id: 'job-1', delay: 60_000 });
  const held = await locks.acquire('held');
  const extended = await locks.acquire('extended');
  const blocker = await locks.acquire('contended', { leaseTime: 60_000 });
  // Parked on the release of a lock held for 60 s: only an outage can end it early.
  const waiting = locks.acquire('contended', { waitTimeout: 30_000 });
  waiting.catch(() => undefined);
  await sleep(200);
  void blocker;
  return { held, extended, waiting };
}

/** Starts every lock and queue call at once, right after the fault; resolves what each one did. */
function callEverything(app: TestingModule, before: Before, faultAt: number): Promise<Settled[]> {
  const locks = app.get(LockService);
  const queue = app.get(DelayQueueService);
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['acquire (default waitTimeout)', () => locks.acquire('a')],
    ['acquire (waitTimeout 500)', () => locks.acquire('b', { waitTimeout: 500 })],
    ['tryAcquire', () => locks.tryAcquire('c')],
    ['using', () => locks.using('d', () => 'ran')],
    ['isLocked', () => locks.isLocked('e')],
    ['release', () => before.held.release()],
    ['extend', () => before.extended.extend(10_000)],
    ['an acquire parked before the fault', () => before.waiting],
    ['schedule', () => queue.schedule('down.topic', { n: 1 }, { delay: 60_000 })],
    ['scheduleMany', () => queue.scheduleMany('down.topic', [{ payload: { n: 2 } }, { payload: { n: 3 } }])],
    ['cancel', () => queue.cancel('down.topic', 'job-1')],
    ['get', () => queue.get('down.topic', 'job-1')],
    ['stats', () => queue.stats('down.topic')],
    ['repeat', () => queue.repeat('down.repeat', { every: 60_000 })],
  ];
  return Promise.all(
    calls.map(async ([name, call]) => {
      let error: unknown;
      try {
        await call();
      } catch (e) {
        error = e;
      }
      return { name, ms: Math.round(performance.now() - faultAt), error };
    }),
  );
}

/** Every call failed with RedisConnectionError naming `cause`, within the bound. */
function expectAllUnreachable(settled: Settled[], cause: RegExp): void {
  const summary = settled.map(({ name, ms, error }) => ({
    name,
    ms,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  }));
  const wrong = summary.filter((s, i) => !(settled[i].error instanceof RedisConnectionError) || !cause.test(s.error) || s.ms >= BOUND_MS);
  expect(wrong).toEqual([]);
}

/** Waits (10 s at most) until `app` is granted a lock again: calls work with nothing to configure. */
async function grantsALockAgain(app: TestingModule, when: string): Promise<void> {
  await waitFor(
    async () => (await app.get(LockService).tryAcquire('after'))?.release().then(() => true),
    10_000,
    `a lock to be granted ${when}`,
    { retryErrors: true },
  );
}

failOnUnhandledRejections({ after: 'each' });

describe('Redis unreachable: every call settles fast with RedisConnectionError', () => {
  describe('Redis dies while the app runs (process killed: connection refused)', () => {
    const { server, app } = useAppOnLocalRedis(
      (redis) => lockApp(redis.url),
      (app) => app.close(),
    );

    it('fails every lock and queue call within the bound, naming ECONNREFUSED; a call made later in the outage too', async () => {
      const before = await prepare(app);
      const exited = new Promise((resolve) => server.process.once('exit', resolve));
      server.process.kill('SIGKILL');
      await exited;
      const killedAt = performance.now();
      expectAllUnreachable(await callEverything(app, before, killedAt), /ECONNREFUSED/);

      // Well into the outage, a new call fails as fast.
      await sleep(1_000);
      const later = performance.now();
      const error = await app
        .get(LockService)
        .tryAcquire('later')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect((error as Error).message).toMatch(/ECONNREFUSED/);
      expect(performance.now() - later).toBeLessThan(BOUND_MS);

      // Redis comes back: calls work again, with nothing to configure.
      await server.restart();
      await grantsALockAgain(app, 'after Redis came back');
    });
  });

  describe('Redis hangs (SIGSTOP: connections stay open, nothing answers)', () => {
    const { server, app } = useAppOnLocalRedis(
      (redis) => lockApp(redis.url),
      (app, redis) => {
        redis.process.kill('SIGCONT');
        return app.close();
      },
    );

    it('fails every lock and queue call within the bound, saying Redis did not answer', async () => {
      const before = await prepare(app);
      server.process.kill('SIGSTOP');
      const stoppedAt = performance.now();
      try {
        expectAllUnreachable(await callEverything(app, before, stoppedAt), /did not answer|no reply|timed? ?out/i);
      } finally {
        server.process.kill('SIGCONT');
      }
      await grantsALockAgain(app, 'after Redis resumed');
    });
  });

  describe('Redis down from the start', () => {
    let port: number;
    beforeAll(async () => {
      // A port nothing listens on: a server started and stopped.
      const server = await startLocalRedisServer();
      port = server.port;
      await server.stop();
    });

    it('bootstrap fails fast with RedisConnectionError naming ECONNREFUSED', async () => {
      const started = performance.now();
      const error = await lockApp(`redis://127.0.0.1:${port}`).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect((error as Error).message).toMatch(/ECONNREFUSED/);
      expect(performance.now() - started).toBeLessThan(BOUND_MS);
    });

    it('with the bootstrap check off (connectTimeout: 0), calls fail within the bound naming ECONNREFUSED', async () => {
      const app = await lockApp(`redis://127.0.0.1:${port}`, { connectTimeout: 0 });
      try {
        const started = performance.now();
        const settled = await Promise.all(
          (
            [
              ['tryAcquire', () => app.get(LockService).tryAcquire('x')],
              ['acquire (waitTimeout 500)', () => app.get(LockService).acquire('y', { waitTimeout: 500 })],
              ['schedule', () => app.get(DelayQueueService).schedule('down.topic', 1)],
            ] as Array<[string, () => Promise<unknown>]>
          ).map(async ([name, call]) => {
            const error = await call().then(
              () => undefined,
              (e: unknown) => e,
            );
            return { name, ms: Math.round(performance.now() - started), error };
          }),
        );
        expectAllUnreachable(settled, /ECONNREFUSED/);
      } finally {
        await app.close();
      }
    });
  });

  describe('over HTTP', () => {
    const { server, app: http } = useAppOnLocalRedis(
      (redis) =>
        listenHttpApp({
          imports: [RedisLockModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix('http-down') })],
          controllers: [OrdersController],
          providers: [PaymentsService, Probe],
        }),
      ({ app }) => app.close(),
    );

    it('@WithLock and @WithRequestLock routes answer 503 with Retry-After within the bound, not 409 or 500', async () => {
      expect((await fetch(`${http.baseUrl}/orders/1/pay`, { method: 'POST' })).status).toBe(201);
      const exited = new Promise((resolve) => server.process.once('exit', resolve));
      server.process.kill('SIGKILL');
      await exited;
      const killedAt = performance.now();
      const answers = await Promise.all(
        ['/orders/2/pay', '/orders/3/ship', '/orders/4/capture'].map(async (path) => {
          const response = await fetch(`${http.baseUrl}${path}`, { method: 'POST' });
          const body = (await response.json()) as { code?: string };
          return {
            path,
            status: response.status,
            retryAfter: response.headers.get('retry-after') !== null,
            code: body.code,
            fast: performance.now() - killedAt < BOUND_MS,
          };
        }),
      );
      expect(answers).toEqual(
        ['/orders/2/pay', '/orders/3/ship', '/orders/4/capture'].map((path) => ({
          path,
          status: 503,
          retryAfter: true,
          code: 'REDIS_CONNECTION',
          fast: true,
        })),
      );
    });
  });
});
