import { Test, type TestingModule } from '@nestjs/testing';
import { LockLostError, LockService, RedisLockModule } from '../../lib/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { sleep } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

async function lockApp(url: string, keyPrefix: string, leaseTime: number): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: url, keyPrefix, lock: { leaseTime } })],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

failOnUnhandledRejections({ after: 'each' });

/** Clients cut off from Redis, and Redis itself restarting, while locks are held and waited for. */
describe('lock faults: network and Redis restarts', () => {
  let server: LocalRedisServer;

  beforeAll(async () => {
    // A private server: these tests restart it, and AOF makes its data survive that.
    server = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('never has two holders when a holder is black-holed: its signal aborts before anyone else gets the lock', async () => {
    const keyPrefix = uniquePrefix('bh');
    const proxy = await FaultProxy.start({ port: server.port });
    const cutOff = await lockApp(proxy.url, keyPrefix, 600);
    const healthy = await lockApp(server.url, keyPrefix, 600);
    try {
      const held = await cutOff.get(LockService).acquire('bh');
      let lostAt = Number.POSITIVE_INFINITY;
      held.signal.addEventListener('abort', () => (lostAt = performance.now()));

      proxy.blackhole();
      const other = await healthy.get(LockService).acquire('bh', { waitTimeout: 10_000 });
      const acquiredAt = performance.now();
      expect(held.signal.aborted).toBe(true);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect((held.signal.reason as LockLostError).reason).toBe('unconfirmed');
      expect(lostAt).toBeLessThanOrEqual(acquiredAt);
      expect(BigInt(other.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));

      // The network comes back broken (a partition that outlasted TCP): the client reconnects and
      // works again; its old hold stays lost and releasing it touches nothing.
      proxy.resetAll();
      proxy.heal();
      await held.release();
      expect(await healthy.get(LockService).isLocked('bh')).toBe(true);
      await other.release();
      const again = await cutOff.get(LockService).acquire('bh', { waitTimeout: 10_000 });
      expect(again.held).toBe(true);
      await again.release();
    } finally {
      await cutOff.close();
      await healthy.close();
      await proxy.stop();
    }
  });

  it('gives up a black-holed acquire at its waitTimeout instead of hanging, as RedisConnectionError (not contention)', async () => {
    const keyPrefix = uniquePrefix('bhw');
    const proxy = await FaultProxy.start({ port: server.port });
    const app = await lockApp(proxy.url, keyPrefix, 1_000);
    try {
      await app
        .get(LockService)
        .tryAcquire('warm')
        .then((l) => l?.release());
      proxy.blackhole();
      const started = performance.now();
      const error = await app
        .get(LockService)
        .acquire('bhw', { waitTimeout: 500 })
        .catch((e: unknown) => e);
      // Redis never answered the try: that is an unreachable Redis, not a lock held by another owner.
      expect((error as Error).name).toBe('RedisConnectionError');
      expect((error as Error).message).toMatch(/did not answer/);
      expect(performance.now() - started).toBeLessThan(3_000);
      proxy.resetAll();
      proxy.heal();
    } finally {
      await app.close();
      await proxy.stop();
    }
  });

  it('wakes a waiter whose release message was lost while its connection was reset', async () => {
    const keyPrefix = uniquePrefix('rst');
    const proxy = await FaultProxy.start({ port: server.port });
    const waiterApp = await lockApp(proxy.url, keyPrefix, 20_000);
    const holderApp = await lockApp(server.url, keyPrefix, 20_000);
    try {
      const held = await holderApp.get(LockService).acquire('rst');
      const started = performance.now();
      const waiting = waiterApp.get(LockService).acquire('rst', { waitTimeout: 15_000 });
      await sleep(300);
      proxy.blackhole();
      await held.release(); // published while the waiter cannot hear it
      await sleep(200);
      proxy.resetAll();
      proxy.heal();
      const lock = await waiting; // without the reconnect wake-up it would sleep out the 20 s lease
      expect(performance.now() - started).toBeLessThan(10_000);
      await lock.release();
    } finally {
      await waiterApp.close();
      await holderApp.close();
      await proxy.stop();
    }
  });

  it('keeps held locks and waiters working across a Redis restart with AOF', async () => {
    const keyPrefix = uniquePrefix('aof');
    const a = await lockApp(server.url, keyPrefix, 3_000);
    const b = await lockApp(server.url, keyPrefix, 3_000);
    try {
      const held = await a.get(LockService).acquire('aof');
      const waiting = b.get(LockService).acquire('aof', { waitTimeout: 20_000 });
      await sleep(200);

      await server.restart({ signal: 'SIGKILL', downtimeMs: 300 });
      await sleep(2_500); // several watchdog ticks after the restart
      expect(held.held).toBe(true); // renewed again once the client reconnected; AOF kept the key

      await held.release();
      const next = await waiting;
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
      await next.release();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
