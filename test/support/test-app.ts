import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { RedisLockModule, type RedisLockModuleOptions } from '../../lib';

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
