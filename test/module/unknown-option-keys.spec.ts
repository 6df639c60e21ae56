import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InvalidOptionsError, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { RedisLockDashboardModule } from '../../lib/observability/dashboard/index.js';
import { RedisLockMetricsModule } from '../../lib/observability/metrics/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { startupFailure } from '../support/thrown.js';

/** Bootstraps an app with `options` (unchecked, as a JavaScript or misconfigured app passes them) and returns what it failed with. */
async function bootstrapError(options: Record<string, unknown>, how: 'forRoot' | 'forRootAsync' = 'forRoot'): Promise<unknown> {
  const all = { redis: testRedisUrl(), keyPrefix: uniquePrefix(), ...options } as RedisLockModuleOptions;
  return startupFailure(async () => {
    // forRoot refuses an unknown top-level key at the call, forRootAsync's factory result at bootstrap.
    const module = how === 'forRoot' ? RedisLockModule.forRoot(all) : RedisLockModule.forRootAsync({ useFactory: () => all });
    const app = await Test.createTestingModule({ imports: [module] }).compile();
    return app.init();
  });
}

describe('Unknown option keys fail at bootstrap, naming the key and the one meant', () => {
  it.each([
    [{ keyprefix: 'app1' }, 'keyprefix', 'keyPrefix'],
    [{ delayQueue: { concurency: 4 } }, 'delayQueue.concurency', 'concurrency'],
    [{ lock: { leasetime: 5_000 } }, 'lock.leasetime', 'leaseTime'],
    [{ lock: { syncReplicas: { replica: 1, timeout: 100 } } }, 'lock.syncReplicas.replica', 'replicas'],
    [{ delayQueue: { backoff: { maxdelay: 10 } } }, 'delayQueue.backoff.maxdelay', 'maxDelay'],
    [{ delayQueue: { retention: { deadLetterMaxCnt: 10 } } }, 'delayQueue.retention.deadLetterMaxCnt', 'deadLetterMaxCount'],
    [{ delayQueue: { outboxRelay: { pollIntervall: 500 } } }, 'delayQueue.outboxRelay.pollIntervall', 'pollInterval'],
    [{ delayQueue: { topics: { 'order.expire': { shard: 4 } } } }, 'delayQueue.topics["order.expire"].shard', 'shards'],
    [{ redlock: { clients: ['redis://127.0.0.1:1'], requestTimout: 100 } }, 'redlock.requestTimout', 'requestTimeout'],
    [{ unreachableTimout: 1_000 }, 'unreachableTimout', 'unreachableTimeout'],
    [{ Tracing: false }, 'Tracing', 'tracing'],
  ])('forRoot(%j) is refused: `%s`, did you mean `%s`', async (options, path, meant) => {
    const error = await bootstrapError(options);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe(path);
    expect((error as Error).message).toContain(`\`${path}\``);
    expect((error as Error).message).toContain(`did you mean \`${meant}\`?`);
  });

  it('forRootAsync refuses them too, and lists the keys of that level when nothing is close', async () => {
    const error = await bootstrapError({ delayQueue: { wibble: 1 } }, 'forRootAsync');
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe('delayQueue.wibble');
    expect((error as Error).message).not.toContain('did you mean');
    expect((error as Error).message).toContain('concurrency, visibilityTimeout, maxAttempts');
  });

  it('an isGlobal returned by the forRootAsync factory is refused with where it belongs', async () => {
    const error = await bootstrapError({ isGlobal: true }, 'forRootAsync');
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(/forRootAsync\(\{ isGlobal: true, useFactory/);
  });

  it('every documented key is accepted (isGlobal beside forRoot options included)', async () => {
    const error = await bootstrapError({
      isGlobal: true,
      lock: { leaseTime: 5_000, waitTimeout: 1_000, watchdog: true, fair: false, syncReplicas: false },
      delayQueue: {
        concurrency: 1,
        visibilityTimeout: 30_000,
        maxAttempts: 3,
        backoff: { delay: 10, factor: 2, maxDelay: 100, jitter: 0 },
        shutdownTimeout: 1_000,
        retention: { deadLetterMaxCount: 10, deadLetterMaxAge: 1_000 },
        topics: { t: { shards: 2 } },
        outboxRelay: { pollInterval: 100, batchSize: 10, minAge: 0, claimLease: 1_000 },
      },
      connectTimeout: 5_000,
      unreachableTimeout: 2_000,
      evictionPolicyCheck: 'warn',
      tracing: false,
    });
    expect(error).toBeUndefined();
  });

  it('RedisLockMetricsModule.forRoot and RedisLockDashboardModule.forRoot refuse unknown keys', async () => {
    @Injectable()
    class Nothing {}
    expect(() => RedisLockMetricsModule.forRoot({ keyPatern: () => 'x' } as never)).toThrow(InvalidOptionsError);
    expect(() => RedisLockMetricsModule.forRoot({ keyPatern: () => 'x' } as never)).toThrow(/`metrics\.keyPatern`.*did you mean `keyPattern`\?/);
    expect(() => RedisLockDashboardModule.forRoot({ readonly: false } as never)).toThrow(/`dashboard\.readonly`.*did you mean `readOnly`\?/);
    expect(() => RedisLockDashboardModule.forRoot({ history: { windowMS: 1 } } as never)).toThrow(
      /`dashboard\.history\.windowMS`.*did you mean `windowMs`\?/,
    );
    expect(new Nothing()).toBeInstanceOf(Nothing);
  });
});
