import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { DelayQueueService, LeaderElection, OnOneInstance } from '../../lib/index.js';
import { OneInstanceLeases } from '../../lib/scheduling/one-instance-leases.js';
import { createRedisLockTestingModule } from '../../lib/testing/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { initOrCloseConnections, uniquePrefix } from '../support/test-app.js';
import { deferred } from '../support/timing.js';
import { AwaitsElection } from './support/awaits-election.js';

const SHUTDOWN_TIMEOUT = 1_000;
/** Long leases: neither may lapse during the test, so the shutdown really has them to hand back. */
const TTL = 60_000;

/** What the leader's and the run's work waits on when Redis stops answering: it never comes. */
const unreachable = new Promise<never>(() => undefined);

@Injectable()
@LeaderElection('down.leader', { ttl: TTL })
class DownLeader extends AwaitsElection {
  /** Flushes the leader's work to Redis before stepping down: with Redis unreachable, it hangs. */
  async onLeadershipLost(): Promise<void> {
    await unreachable;
  }
}

@Injectable()
class DownRunner {
  readonly started = deferred();
  @OnOneInstance({ key: 'down.once', ttl: TTL })
  async work(): Promise<'ran'> {
    return 'ran';
  }
  /** A run writing to Redis when it stopped answering. */
  @OnOneInstance({ key: 'down.once', ttl: TTL })
  async stuck(): Promise<void> {
    this.started.resolve();
    await unreachable;
  }
}

/**
 * `app.close()` ends within `delayQueue.shutdownTimeout` plus a bounded second or so when Redis stops
 * answering while a `@LeaderElection` leads and an `@OnOneInstance` lease is held: handing them back
 * is not awaited past the shutdown budget (the leases' ttl frees them), nor are the leader's
 * `onLeadershipLost` and a run in progress, both stuck on the unreachable Redis. Issue 23, defect 7:
 * it took 17.5 s with `shutdownTimeout: 1000` (the release), and the hook's and the run's `ttl`.
 */
describe('shutdown with Redis unreachable, while leading and holding an @OnOneInstance lease', () => {
  let server: LocalRedisServer;
  beforeAll(async () => {
    server = await startLocalRedisServer();
  });
  afterAll(() => server.stop());

  async function leadingApp(): Promise<TestingModule> {
    const app = await initOrCloseConnections(
      await createRedisLockTestingModule({
        redis: server.url,
        redisLock: { keyPrefix: uniquePrefix('down'), delayQueue: { shutdownTimeout: SHUTDOWN_TIMEOUT } },
        providers: [DownLeader, DownRunner],
      }).compile(),
    );
    await app.get(DownLeader).elected.promise;
    const runner = app.get(DownRunner);
    expect(await runner.work()).toBe('ran');
    expect(app.get(OneInstanceLeases).holds('down.once')).toBe(true);
    void runner.stuck();
    await runner.started.promise;
    return app;
  }

  /** How long `app.close()` took; 20 s if it had not ended by then (it goes on in the background). */
  async function closeMs(app: TestingModule): Promise<number> {
    const startedAt = performance.now();
    const closing = app.close();
    closing.catch(() => undefined);
    // The 20 s timer is cleared once close() ends: left running, it kept the Jest worker alive 20 s
    // past the file ('A worker process has failed to exit gracefully').
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closing, new Promise((resolve) => (timer = setTimeout(resolve, 20_000)))]);
    clearTimeout(timer);
    return performance.now() - startedAt;
  }

  it('Redis killed while a job handler outlives the shutdown budget: close() ends within shutdownTimeout + 2 s', async () => {
    const app = await initOrCloseConnections(
      await createRedisLockTestingModule({
        redis: server.url,
        redisLock: { keyPrefix: uniquePrefix('down'), delayQueue: { shutdownTimeout: SHUTDOWN_TIMEOUT } },
      }).compile(),
    );
    app.useLogger(false);
    const queue = app.get(DelayQueueService);
    const started = deferred();
    queue.consume('down.jobs', async () => {
      started.resolve();
      await unreachable;
    });
    await queue.schedule('down.jobs', 1);
    await started.promise;
    const exited = new Promise((resolve) => server.process.once('exit', resolve));
    server.process.kill('SIGKILL');
    await exited;
    try {
      // The handler never returns: it is aborted at the budget, and handing its job back needs Redis.
      expect(await closeMs(app)).toBeLessThan(SHUTDOWN_TIMEOUT + 2_000);
    } finally {
      await server.restart();
    }
  });

  it.each([
    ['paused (SIGSTOP: connections open, no reply)', 'SIGSTOP', () => server.process.kill('SIGCONT')],
    ['killed (connections refused)', 'SIGKILL', () => server.restart()],
  ] as const)('Redis %s: close() ends within shutdownTimeout + 2 s', async (_how, signal, recover) => {
    const app = await leadingApp();
    server.process.kill(signal);
    try {
      expect(await closeMs(app)).toBeLessThan(SHUTDOWN_TIMEOUT + 2_000);
    } finally {
      await recover();
    }
  });
});
