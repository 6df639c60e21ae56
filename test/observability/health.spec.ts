import { redisOptionFor } from '../support/test-driver.js';
import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { RedisLockHealthIndicator, RedisLockHealthModule } from 'nestjs-redis-lock/health';
import { DelayQueueService, RedisLockModule } from '../../lib/index.js';
import { uniquePrefix } from '../support/test-app.js';
import { holdsWithin } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { useAppOnLocalRedis } from '../support/use-local-redis-server.js';
import { readThrough } from '../support/use-resource.js';

failOnUnhandledRejections();

describe('RedisLockHealthIndicator', () => {
  // The stopped server makes the client log its reconnect attempts.
  beforeAll(() => muteNestLogger('warn', 'error'));
  const { server, app } = useAppOnLocalRedis(
    async (redis) => {
      const app = await Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({ redis: redisOptionFor(redis.url), keyPrefix: uniquePrefix('h'), isGlobal: true }),
          RedisLockHealthModule,
        ],
      }).compile();
      return app.init();
    },
    (app) => app.close(),
  );
  const health = readThrough<RedisLockHealthIndicator>('the app', () => app.get(RedisLockHealthIndicator));
  const queue = readThrough<DelayQueueService>('the app', () => app.get(DelayQueueService));
  afterAll(() => jest.restoreAllMocks());

  it('is up while Redis answers PING, with the round trip', async () => {
    const result = await health.pingCheck('redis');
    expect(result).toEqual({ redis: { status: 'up', latencyMs: expect.any(Number) } });
  });

  it('compares each topic backlog and dead letters with its thresholds', async () => {
    await queue.scheduleMany('health.a', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await queue.schedule('health.b', 1, { delay: 60_000 });

    const fine = await health.checkQueues('queues', { 'health.a': { maxDue: 3, maxDead: 0 }, 'health.b': { maxDue: 0 } });
    expect(fine.queues.status).toBe('up');
    expect(fine.queues.topics).toEqual({
      'health.a': { scheduled: 0, due: 3, active: 0, dead: 0, schedules: 0, paused: false, grouped: 0, busyGroups: 0, readyGroups: 0 },
      'health.b': { scheduled: 1, due: 0, active: 0, dead: 0, schedules: 0, paused: false, grouped: 0, busyGroups: 0, readyGroups: 0 },
    });

    const backlog = await health.checkQueues('queues', { 'health.a': { maxDue: 2 } });
    expect(backlog.queues.status).toBe('down');
    expect(backlog.queues.topics['health.a'].problems).toEqual(['due 3 > 2']);
  });

  it('is down, within its timeout, while Redis is gone, and up again when it is back', async () => {
    // Killed, and started again on the same port 3 s later; the checks run during the gap.
    const back = server.restart({ signal: 'SIGKILL', downtimeMs: 3_000 });
    let ping = await health.pingCheck('redis', { timeout: 300 });
    while (ping.redis.status === 'up') ping = await health.pingCheck('redis', { timeout: 300 });
    // On a private endpoint the cause may be shown (a refused connection, or no reply in time).
    const detailed = await health.pingCheck('redis', { timeout: 300, showCause: true });
    expect(detailed.redis).toEqual({ status: 'down', message: expect.stringMatching(/ECONNREFUSED|unreachable|no PING reply|closed/) });
    const started = performance.now();
    const queues = await health.checkQueues('queues', { 'health.a': {} }, { timeout: 300 });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(ping.redis.status).toBe('down');
    expect(ping.redis.message).toBe('Redis did not answer (the cause is in the application log)');
    expect(queues.queues.status).toBe('down');

    await back;
    let again = await health.pingCheck('redis', { timeout: 300 });
    await holdsWithin(async () => (again = await health.pingCheck('redis', { timeout: 300 })).redis.status === 'up', 10_000, {
      every: 100,
    });
    expect(again.redis.status).toBe('up');
  });
});
