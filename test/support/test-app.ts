import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockService, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';

/** The Redis URL of this run (set by global-setup). */
export function testRedisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: run the tests through jest so that global-setup starts Redis.');
  return url;
}

/** A key prefix no other spec uses, so specs can share one Redis. */
export function uniquePrefix(label = 't'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** A Nest testing module with RedisLockModule on the run's Redis; closed with `app.close()`. */
export async function createLockApp(options: RedisLockModuleOptions = {}): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix(), ...options })],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

/** A plain client for looking at (or tampering with) keys from outside the library. */
export function rawRedis(url = testRedisUrl()): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1 });
}

/** Two module instances on one key prefix: they behave like two processes contending for the same locks. */
export interface LockServicePair {
  readonly keyPrefix: string;
  /** Both services; call it in a `beforeAll` registered after `useLockServicePair`. */
  services(): { a: LockService; b: LockService };
}

/** Starts two lock apps before the spec's tests and closes them after. */
export function useLockServicePair(label: string, options: RedisLockModuleOptions = {}): LockServicePair {
  const keyPrefix = uniquePrefix(label);
  let apps: TestingModule[] = [];
  beforeAll(async () => {
    apps = await Promise.all([createLockApp({ ...options, keyPrefix }), createLockApp({ ...options, keyPrefix })]);
  });
  afterAll(() => Promise.all(apps.map((app) => app.close())));
  return {
    keyPrefix,
    services: () => ({ a: apps[0].get(LockService), b: apps[1].get(LockService) }),
  };
}
