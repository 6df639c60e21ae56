import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { DelayQueueService, LockService, RedisConnectionError, type RedisConnectionOptions } from '../../../lib/index.js';
import { initRedisLockTestingModule, uniqueKeyPrefix } from '../../../lib/testing/index.js';
import { failOnUnhandledRejections } from '../../support/fail-on-unhandled-rejections.js';
import { useLocalRedisServer } from '../../support/use-local-redis-server.js';

/*
 * Review of issue 38: the module's own connections (built from options) on node-redis and GLIDE,
 * Redis down for 10 s while a waiter waits and a consumer consumes: each call settles within
 * ~2.5 s with RedisConnectionError naming ECONNREFUSED; the module logs a bounded number of lines;
 * the app works again once Redis is back; app.close() with Redis down is bounded.
 */

failOnUnhandledRejections();

async function settle<T>(promise: Promise<T>, capMs: number): Promise<{ ms: number; error?: unknown; pending?: true }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<{ pending: true }>((resolve) => (timer = setTimeout(() => resolve({ pending: true }), capMs)));
  const outcome = await Promise.race([
    promise.then(
      () => ({}),
      (error: unknown) => ({ error }),
    ),
    cap,
  ]);
  clearTimeout(timer);
  return { ms: performance.now() - start, ...outcome };
}

describe.each(['node-redis', 'valkey-glide'] as const)('review-38: a 10 s outage on %s', (driver) => {
  const server = useLocalRedisServer();

  it('calls settle within 2.5 s naming the cause, few log lines, works after, closes bounded while down', async () => {
    const lines: string[] = [];
    for (const level of ['log', 'warn', 'error'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation((message: unknown) => void lines.push(`${level}: ${String(message)}`));
    }
    const app: TestingModule = await initRedisLockTestingModule({
      redis: { driver, url: server.url } as RedisConnectionOptions,
      redisLock: { keyPrefix: uniqueKeyPrefix('r38') },
    });
    let closed = false;
    try {
      const locks = app.get(LockService);
      const jobs = app.get(DelayQueueService);
      const consumer = jobs.consume('o-topic', () => undefined);
      const holder = await locks.acquire('o-k', { leaseTime: 60_000 });
      const waiter = settle(locks.acquire('o-k', { waitTimeout: 30_000 }), 40_000);
      await new Promise((r) => setTimeout(r, 300));
      const before = lines.length;
      let bringBack!: () => void;
      const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
      await new Promise((r) => setTimeout(r, 500));
      const outcomes: Array<{ ms: number; error?: unknown; pending?: true }> = [];
      for (let i = 0; i < 4; i++) {
        outcomes.push(
          ...(await Promise.all([
            settle(locks.tryAcquire('o-x'), 8_000),
            settle(jobs.schedule('o-topic', { i }), 8_000),
            settle(locks.isLocked('o-y'), 8_000),
          ])),
        );
        await new Promise((r) => setTimeout(r, 1_000));
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 10_000 - 4 * 1_000)));
      const during = lines.slice(before);
      bringBack();
      await restarted;
      const report: Record<string, unknown> = {};
      report.slowOrWrong = outcomes
        .filter((o) => o.pending || !(o.error instanceof RedisConnectionError) || o.ms > 2_500)
        .map((o) => `${Math.round(o.ms)} ms ${o.pending ? 'pending' : String(o.error).slice(0, 90)}`);
      report.causeNotNamed = outcomes.filter((o) => !/ECONNREFUSED|refused/.test(String((o.error as Error)?.message))).length;
      // log lines of the module during 10 s of outage: bounded (a flood would be hundreds)
      report.logFlood = during.length >= 30 ? during.length : false;
      // after it is back (empty): the app works again within a few seconds
      const start = performance.now();
      let ok = false;
      while (!ok && performance.now() - start < 10_000) {
        ok = await locks.tryAcquire('o-after').then(
          (h) => h !== null,
          () => false,
        );
        if (!ok) await new Promise((r) => setTimeout(r, 200));
      }
      report.recoveredMs = ok ? (performance.now() - start < 3_000 ? 'fast' : Math.round(performance.now() - start)) : 'never';
      void holder;
      void consumer;
      // down again, then close: bounded
      let bringBack2!: () => void;
      const restarted2 = server.restart({ until: new Promise<void>((resolve) => (bringBack2 = resolve)) });
      await new Promise((r) => setTimeout(r, 300));
      const closing = await settle(app.close(), 15_000);
      closed = true;
      bringBack2();
      await restarted2;
      report.closeWhileDown = closing.pending ? 'pending' : closing.ms < 8_000 ? 'bounded' : Math.round(closing.ms);
      const w = await waiter;
      report.waiterPending = w.pending ?? false;
      expect(report).toEqual({
        slowOrWrong: [],
        causeNotNamed: 0,
        logFlood: false,
        recoveredMs: 'fast',
        closeWhileDown: 'bounded',
        waiterPending: false,
      });
    } finally {
      if (!closed) await app.close();
      jest.restoreAllMocks();
      if (process.env.R38_DEBUG) console.log(lines.join('\n'));
    }
  });
});
