// The README's "Testing your app" example, verbatim but for the import path of the app's classes:
// keep the two in step. It tests the README's own OrdersService (fixtures/readme-app.ts).
import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService } from 'nestjs-redis-lock';
import {
  closeRedisLockTestingModule,
  createRedisLockTestingModule,
  startTestRedis,
  type TestRedis,
} from 'nestjs-redis-lock/testing';
import { OrdersService } from './fixtures/readme-app.js';

describe('OrdersService', () => {
  let redis: TestRedis;
  let moduleRef: TestingModule;

  beforeAll(async () => {
    redis = await startTestRedis(); // REDIS_URL, or a private redis-server from PATH
  });
  afterAll(() => redis.stop());

  beforeEach(async () => {
    moduleRef = await createRedisLockTestingModule({ redis, providers: [OrdersService] }).compile();
    await moduleRef.init();
  });
  afterEach(() => closeRedisLockTestingModule(moduleRef, { removeKeys: true }));

  it('pays an order', async () => {
    await expect(moduleRef.get(OrdersService).pay('1001')).resolves.toBeUndefined();
  });

  it('refuses to pay an order that another instance is paying', async () => {
    const otherInstance = await moduleRef.get(LockService).acquire('order:1001');
    await expect(moduleRef.get(OrdersService).pay('1001')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await otherInstance.release();
  });
});
