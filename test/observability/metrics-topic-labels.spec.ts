import { jest } from '@jest/globals';
import { Controller, Get, Header, Logger, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedisLockMetrics, RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { Injectable } from '@nestjs/common';
import { DelayQueueService, InvalidOptionsError, OnDelayed, RedisLockModule } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';

@Controller('metrics')
class MetricsController {
  constructor(private readonly metrics: RedisLockMetrics) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}

const TOPICS = 1_500;

/**
 * docs/security.md, "Limits": topics named from tenant input must not grow the label set, the
 * scrape nor its Redis work without bound. The first `maxTopics` topics keep their name; the rest
 * are counted under `<other>`, and only kept topics have their depths read from Redis.
 */
describe('metrics: topic labels are capped and a scrape costs Redis a bounded number of calls', () => {
  let server: LocalRedisServer;
  let app: INestApplication;
  let base: string;
  const warnings: string[] = [];

  beforeAll(async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(function (this: Logger, message: unknown) {
      warnings.push(String(message));
    });
    // A private Redis: INFO's command counter counts every client.
    server = await startLocalRedisServer();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({ redis: server.url, keyPrefix: 'mt', isGlobal: true }),
        RedisLockMetricsModule.forRoot({ registry: new Registry(), topics: ['configured.topic'] }),
      ],
      controllers: [MetricsController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    jest.restoreAllMocks();
  });

  it(`${TOPICS} tenant topics give at most 100 topic labels plus "<other>", one warning, and ~100 Redis calls per scrape`, async () => {
    const queue = app.get(DelayQueueService);
    for (let i = 0; i < TOPICS; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => queue.schedule(`tenant-${i + j}.report`, { n: i + j }, { delay: 3_600_000 })),
      );
    }
    const redis = rawRedis(server.url);
    try {
      // Round trips the scrape made (scripts and plain commands), and every command Redis ran for it (inside scripts too).
      const counters = async () => {
        const info = await redis.info('commandstats');
        const calls = [...info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].filter(([, name]) => name !== 'info');
        return {
          all: calls.reduce((sum, [, , n]) => sum + Number(n), 0),
          scripts: calls.filter(([, name]) => /^(evalsha|eval|fcall)$/.test(name)).reduce((sum, [, , n]) => sum + Number(n), 0),
        };
      };
      const before = await counters();
      const started = performance.now();
      const response = await fetch(`${base}/metrics`);
      const text = await response.text();
      const ms = performance.now() - started;
      const after = await counters();
      const calls = after.scripts - before.scripts;
      const commands = after.all - before.all;
      const labels = new Set([...text.matchAll(/topic="([^"]*)"/g)].map((m) => m[1]));
      const series = text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
      console.log(
        `one scrape with ${TOPICS} topics: ${Buffer.byteLength(text)} bytes, ${series} series, ${labels.size} ` +
          `topic labels, ${calls} Redis scripts (${commands} commands in all), ${ms.toFixed(0)} ms`,
      );

      expect(response.status).toBe(200);
      expect(labels.size).toBeLessThanOrEqual(101);
      expect(labels.has('<other>')).toBe(true);
      expect(labels.has('configured.topic')).toBe(true);
      expect(text).toMatch(/redis_lock_jobs_total\{topic="<other>",outcome="scheduled"\} (\d+)/);
      const other = Number(/redis_lock_jobs_total\{topic="<other>",outcome="scheduled"\} (\d+)/.exec(text)![1]);
      expect(other).toBe(TOPICS - 99); // 100 kept: the configured topic and the first 99 scheduled
      expect(calls).toBeLessThanOrEqual(100 + 5);
      expect(Buffer.byteLength(text)).toBeLessThan(150_000);
      expect(warnings.filter((w) => w.includes('maxTopics'))).toHaveLength(1);

      // A second scrape, after more new topics: still one warning, still bounded.
      await queue.schedule('tenant-late.report', 1, { delay: 3_600_000 });
      const again = await (await fetch(`${base}/metrics`)).text();
      expect(new Set([...again.matchAll(/topic="([^"]*)"/g)].map((m) => m[1])).size).toBeLessThanOrEqual(101);
      expect(warnings.filter((w) => w.includes('maxTopics'))).toHaveLength(1);
    } finally {
      await redis.quit();
    }
  }, 120_000);

  it('refuses a maxTopics that is not a whole number from 1, and more configured topics than maxTopics', () => {
    expect(() => RedisLockMetricsModule.forRoot({ maxTopics: 0 })).toThrow(InvalidOptionsError);
    expect(() => RedisLockMetricsModule.forRoot({ maxTopics: 1.5 })).toThrow(/metrics\.maxTopics/);
    expect(() => RedisLockMetricsModule.forRoot({ maxTopics: 1, topics: ['a', 'b'] })).toThrow(/metrics\.topics.*maxTopics/);
    expect(() => RedisLockMetricsModule.forRoot({ maxKeyPatterns: -1 })).toThrow(/metrics\.maxKeyPatterns/);
  });
});

/** The application's own topics: consumed here, but with no job yet when the tenants' topics arrive. */
@Injectable()
class OwnHandlers {
  @OnDelayed('app.own')
  own(): void {}
}

/**
 * After a restart, tenant topics seen first must not push the application's own topics (its
 * `@OnDelayed` handlers, its sharded topics) under the overflow label, where their queue depth
 * would go unread; and a tenant topic named `other` must not pass for the overflow.
 */
describe("metrics: the application's own topics keep their labels whatever tenants create first", () => {
  let app: INestApplication;
  let base: string;
  beforeAll(async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({
          redis: testRedisUrl(),
          keyPrefix: uniquePrefix('mto'),
          isGlobal: true,
          delayQueue: { topics: { 'app.sharded': { shards: 2 } } },
        }),
        RedisLockMetricsModule.forRoot({ registry: new Registry(), maxTopics: 4, topics: ['configured.topic'] }),
      ],
      providers: [OwnHandlers],
      controllers: [MetricsController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app?.close();
    jest.restoreAllMocks();
  });

  it('seeds the configured, handler and sharded topics before any tenant topic; the overflow label is no topic name', async () => {
    const queue = app.get(DelayQueueService);
    for (const topic of ['other', 'tenant.a', 'tenant.b']) await queue.schedule(topic, 1, { delay: 3_600_000 });
    await queue.schedule('app.own', { n: 1 }, { delay: 3_600_000 });
    await queue.schedule('app.sharded', { n: 1 }, { delay: 3_600_000 });
    const text = await (await fetch(`${base}/metrics`)).text();
    const labels = new Set([...text.matchAll(/topic="([^"]*)"/g)].map((m) => m[1]));
    // maxTopics 4: the three seeded, then the first tenant topic (named `other`); the later two overflow.
    expect(labels).toEqual(new Set(['configured.topic', 'app.own', 'app.sharded', 'other', '<other>']));
    expect(text).toContain('redis_lock_queue_jobs{topic="app.own",state="scheduled"} 1');
    expect(text).toContain('redis_lock_queue_jobs{topic="app.sharded",state="scheduled"} 1');
    expect(text).toContain('redis_lock_jobs_total{topic="other",outcome="scheduled"} 1');
    expect(text).toContain('redis_lock_jobs_total{topic="<other>",outcome="scheduled"} 2');
    expect(text).not.toMatch(/topic="tenant\./);
  });
});
