import { Injectable } from '@nestjs/common';
import { InvalidOptionsError, type RedisLockModuleOptions } from '../../lib/index.js';
import { RedisLockDashboardModule } from '../../lib/observability/dashboard/index.js';
import { RedisLockMetricsModule } from '../../lib/observability/metrics/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { lockModuleStartupFailure } from '../support/module-startup.js';

/** What an app of `options` (with the run's Redis and a unique prefix) failed to start with. */
function bootstrapError(options: Record<string, unknown>, how: 'forRoot' | 'forRootAsync' = 'forRoot'): Promise<unknown> {
  return lockModuleStartupFailure({ redis: testRedisUrl(), keyPrefix: uniquePrefix(), ...options } as RedisLockModuleOptions, how);
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
    expectInvalidOption(await bootstrapError(options), path, `\`${path}\``, `did you mean \`${meant}\`?`);
  });

  it('forRootAsync refuses them too, and lists the keys of that level when nothing is close', async () => {
    const error = await bootstrapError({ delayQueue: { wibble: 1 } }, 'forRootAsync');
    expectInvalidOption(error, 'delayQueue.wibble', 'concurrency, visibilityTimeout, maxAttempts');
    expect((error as Error).message).not.toContain('did you mean');
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
    expect(() => RedisLockMetricsModule.forRoot({ keyPatern: () => 'x' } as never)).toThrow(
      /`metrics\.keyPatern`.*did you mean `keyPattern`\?/,
    );
    expect(() => RedisLockDashboardModule.forRoot({ readonly: false } as never)).toThrow(
      /`dashboard\.readonly`.*did you mean `readOnly`\?/,
    );
    expect(() => RedisLockDashboardModule.forRoot({ history: { windowMS: 1 } } as never)).toThrow(
      /`dashboard\.history\.windowMS`.*did you mean `windowMs`\?/,
    );
    expect(new Nothing()).toBeInstanceOf(Nothing);
  });
});
