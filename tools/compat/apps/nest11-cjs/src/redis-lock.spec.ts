// A user's own test in the Nest 11 template's Jest setup (Jest 30, ts-jest, CommonJS: package.json
// "jest"), run by tools/compat/run-compat.js with each Node version of the lane.
import { Injectable, Module } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { DelayQueueService, LockService, OnDelayed, RedisLockError, type JobContext } from 'nestjs-redis-lock';
import { closeRedisLockTestingModule, initRedisLockTestingModule, startTestRedis, type TestRedis } from 'nestjs-redis-lock/testing';

interface Reminder {
  orderId: string;
}

@Injectable()
class Reminders {
  readonly delivered: Promise<{ payload: Reminder; job: JobContext }>;
  private deliver!: (delivery: { payload: Reminder; job: JobContext }) => void;

  constructor() {
    this.delivered = new Promise((resolve) => (this.deliver = resolve));
  }

  @OnDelayed('jest.reminder')
  remind(payload: Reminder, job: JobContext): void {
    this.deliver({ payload, job });
  }
}

@Module({ providers: [Reminders] })
class RemindersModule {}

describe('nestjs-redis-lock in a CommonJS Jest test', () => {
  let redis: TestRedis;
  let moduleRef: TestingModule;

  beforeAll(async () => {
    redis = await startTestRedis();
    moduleRef = await initRedisLockTestingModule({ redis, imports: [RemindersModule] });
  }, 60_000);

  afterAll(async () => {
    await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    await redis.stop();
  }, 60_000);

  it('loads the CommonJS build', () => {
    expect(require.resolve('nestjs-redis-lock')).toMatch(/[\\/]dist[\\/]cjs[\\/]index\.js$/);
    expect(require.resolve('nestjs-redis-lock/testing')).toMatch(/[\\/]dist[\\/]cjs[\\/]testing[\\/]index\.js$/);
  });

  it('takes a lock that a second caller cannot take meanwhile', async () => {
    const locks = moduleRef.get(LockService);
    const lock = await locks.acquire('jest:order:1');
    try {
      expect(lock.held).toBe(true);
      expect(lock.fencingToken).toMatch(/^[1-9][0-9]*$/);
      expect(await locks.tryAcquire('jest:order:1')).toBeNull();
    } finally {
      await lock.release();
    }
    expect(await locks.isLocked('jest:order:1')).toBe(false);
  });

  it('runs a delayed job in its @OnDelayed handler', async () => {
    const id = await moduleRef.get(DelayQueueService).schedule<Reminder>('jest.reminder', { orderId: '42' }, { delay: 100 });
    const { payload, job } = await moduleRef.get(Reminders).delivered;
    expect(job.id).toBe(id);
    expect(job.attempt).toBe(1);
    expect(payload).toEqual({ orderId: '42' });
  }, 30_000);

  it('throws errors a test can catch by class', async () => {
    const locks = moduleRef.get(LockService);
    await expect(locks.acquire('', { waitTimeout: 0 })).rejects.toBeInstanceOf(RedisLockError);
  });
});
