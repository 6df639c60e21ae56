import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { DelayQueueService, LockService, RedisConnectionError, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { UnsupportedInRedlockModeError } from '../../lib/core/errors/unsupported-in-redlock-mode.error.js';
import { findFreePort } from '../../lib/testing/local-redis-server.js';
import { startIndependentMasters, type IndependentMasters } from '../support/independent-masters.js';
import { uniquePrefix } from '../support/test-app.js';
import { createRedlockApp } from './redlock-test-app.js';
import { sleep } from '../support/timing.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { lockModuleStartupFailure } from '../support/module-startup.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

describe('Redlock: options and unsupported lock kinds', () => {
  let masters: IndependentMasters;

  beforeAll(async () => {
    masters = await startIndependentMasters(3);
  });
  afterAll(async () => {
    await masters?.stop();
    // ioredis waits up to 2 s for a socket closed mid-reconnect (the unreachable masters above).
    await sleep(2_500);
  });

  it.each<[string, RedisLockModuleOptions['redlock'] | unknown, string]>([
    ['no clients', { clients: [] }, 'redlock.clients'],
    ['clients not an array', { clients: 'redis://127.0.0.1:1' }, 'redlock.clients'],
    ['a bad URL', { clients: ['http://127.0.0.1:1'] }, 'redlock.clients[0]'],
    ['a cluster as a master', { clients: [{ cluster: [{ host: '127.0.0.1', port: 7000 }] }] }, 'redlock.clients[0]'],
    ['the same server twice', { clients: ['redis://127.0.0.1:7001', { host: '127.0.0.1', port: 7001 }] }, 'redlock.clients[1]'],
    ['a drift factor out of range', { clients: ['redis://127.0.0.1:7001'], driftFactor: 0.7 }, 'redlock.driftFactor'],
    ['a negative request timeout', { clients: ['redis://127.0.0.1:7001'], requestTimeout: -1 }, 'redlock.requestTimeout'],
  ])('fails at bootstrap with %s', async (_, redlock, option) => {
    const error = await lockModuleStartupFailure({ redlock: redlock as RedisLockModuleOptions['redlock'], connectTimeout: 0 });
    expectInvalidOption(error, option);
  });

  it('refuses lock options that need a single Redis at bootstrap', async () => {
    const redlock = { clients: masters.urls };
    expectInvalidOption(await lockModuleStartupFailure({ redlock, lock: { fair: true } }), 'lock.fair');
    expectInvalidOption(
      await lockModuleStartupFailure({ redlock, lock: { syncReplicas: { replicas: 1, timeout: 100 } } }),
      'lock.syncReplicas',
    );
  });

  it('fails at bootstrap when fewer than a majority of masters answer', async () => {
    const [dead1, dead2] = [await findFreePort(), await findFreePort()];
    // The delayed-job connection is one the test owns: a failed bootstrap runs no shutdown hooks.
    const jobs = new Redis(masters.urls[0]);
    const error = await lockModuleStartupFailure({
      redis: { client: jobs },
      redlock: { clients: [masters.urls[0], `redis://127.0.0.1:${dead1}`, `redis://127.0.0.1:${dead2}`] },
      connectTimeout: 2_000,
    });
    jobs.disconnect();
    expect(error).toBeInstanceOf(RedisConnectionError);
    expect((error as Error).message).toMatch(/Only 1 of 3 Redlock masters answered/);
  });

  it('starts with a minority of masters unreachable', async () => {
    const dead = await findFreePort();
    const app = await createRedlockApp([masters.urls[0], masters.urls[1], `redis://127.0.0.1:${dead}`], { connectTimeout: 2_000 });
    try {
      const lock = await app.get(LockService).acquire('minority-down');
      await lock.release();
    } finally {
      await app.close();
    }
  });

  it('refuses fair, read/write and semaphore locks with a typed error at call time', async () => {
    const app = await createRedlockApp(masters.urls);
    try {
      const locks = app.get(LockService);
      expect(() => locks.readWrite('rw')).toThrow(UnsupportedInRedlockModeError);
      expect(() => locks.semaphore('sem', 2)).toThrow(UnsupportedInRedlockModeError);
      const error = await locks.acquire('fair', { fair: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedInRedlockModeError);
      expect((error as UnsupportedInRedlockModeError).code).toBe('UNSUPPORTED_IN_REDLOCK_MODE');
      expect((error as Error).message).toMatch(/Use the exclusive lock/);
    } finally {
      await app.close();
    }
  });

  it('works through forRootAsync, never closes clients it was given, and runs delayed jobs on the first master', async () => {
    const owned = masters.urls.map((url) => new Redis(url));
    const keyPrefix = uniquePrefix('rla');
    const app = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRootAsync({
          useFactory: async () => ({ keyPrefix, redlock: { clients: owned } }),
        }),
      ],
    }).compile();
    app.useLogger(false);
    await app.init();
    try {
      const lock = await app.get(LockService).acquire('async');
      await lock.release();
      await app.get(DelayQueueService).schedule('topic', { n: 1 }, { delay: 60_000 });
      expect(await masters.raw(0).exists(new RedisKeySpace(keyPrefix).topic('topic').due)).toBe(1);
      expect(await masters.raw(1).exists(new RedisKeySpace(keyPrefix).topic('topic').due)).toBe(0);
    } finally {
      await app.close();
    }
    expect(owned.map((client) => client.status)).toEqual(['ready', 'ready', 'ready']);
    expect(await owned[1].ping()).toBe('PONG');
    owned.forEach((client) => client.disconnect());
  });
});
