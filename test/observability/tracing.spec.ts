import { jest } from '@jest/globals';
import { Controller, Get, Injectable, Param } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import * as otelApi from '@opentelemetry/api';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { DelayQueueService, LockAcquireTimeoutError, LockService, RedisLockModule, WithLock, WithRequestLock } from '../../lib/index.js';
import { decodeJob } from '../../lib/delay-queue/jobs/job-codec.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { tracingFrom } from '../../lib/core/tracing/open-telemetry-tracing.js';
import { NO_TRACING } from '../../lib/core/tracing/redis-lock-tracing.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';

@Injectable()
class LedgerService {
  @WithLock('ledger:<0>')
  async post(_account: string): Promise<string | undefined> {
    return trace.getActiveSpan()?.spanContext().spanId;
  }
}

@Controller('reports')
class ReportsController {
  @Get(':id')
  @WithRequestLock('report:<params.id>')
  build(@Param('id') id: string): { id: string; spanId?: string } {
    return { id, spanId: trace.getActiveSpan()?.spanContext().spanId };
  }
}

/** Runs `fn` inside a span of the test's own, as a request handler would. */
function inRequestSpan<T>(fn: (span: Span) => Promise<T>): Promise<T> {
  return trace.getTracer('test').startActiveSpan('request', async (span) => {
    try {
      return await fn(span);
    } finally {
      span.end();
    }
  });
}

describe('OpenTelemetry tracing', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager();
  let app: TestingModule;
  let locks: LockService;
  let queue: DelayQueueService;
  let keyPrefix: string;

  const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);

  beforeAll(async () => {
    muteNestLogger('error'); // the failing handler's log
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
    keyPrefix = uniquePrefix('otel');
    app = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix, delayQueue: { maxAttempts: 1 } })],
      providers: [LedgerService],
    }).compile();
    await app.init();
    locks = app.get(LockService);
    queue = app.get(DelayQueueService);
  });
  afterAll(async () => {
    await app.close();
    trace.disable();
    context.disable();
    await provider.shutdown();
    jest.restoreAllMocks();
  });
  beforeEach(() => exporter.reset());

  it('wraps acquire and the locked call in spans of the caller’s trace, with key and fencing token', async () => {
    let inner: string | undefined;
    const request = await inRequestSpan(async (span) => {
      await locks.using('order:1', () => (inner = trace.getActiveSpan()?.spanContext().spanId), { keyPattern: 'order:<id>' });
      return span.spanContext();
    });

    const [acquire] = spans('lock.acquire');
    const [held] = spans('lock.held');
    expect(acquire.spanContext().traceId).toBe(request.traceId);
    expect(acquire.parentSpanContext?.spanId).toBe(request.spanId);
    expect(held.parentSpanContext?.spanId).toBe(request.spanId);
    expect(acquire.attributes).toMatchObject({
      'redis_lock.key': 'order:1',
      'redis_lock.key_pattern': 'order:<id>',
      'redis_lock.kind': 'mutex',
      'redis_lock.acquired': true,
    });
    expect(acquire.attributes['redis_lock.fencing_token']).toMatch(/^\d+$/);
    expect(held.attributes['redis_lock.fencing_token']).toBe(acquire.attributes['redis_lock.fencing_token']);
    expect(inner).toBe(held.spanContext().spanId); // the locked call runs inside the lock.held span
    expect(held.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it('marks an acquire that timed out as an error and a tryAcquire that found the lock busy as not acquired', async () => {
    const holder = await locks.acquire('busy');
    try {
      await expect(locks.acquire('busy', { waitTimeout: 30 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      expect(await locks.tryAcquire('busy')).toBeNull();
    } finally {
      await holder.release();
    }
    const [held, timedOut, tried] = spans('lock.acquire');
    expect(held.attributes['redis_lock.acquired']).toBe(true);
    expect(timedOut.status).toEqual({ code: SpanStatusCode.ERROR, message: 'lock not free in time' });
    expect(timedOut.attributes['redis_lock.acquired']).toBe(false);
    expect(tried.status.code).toBe(SpanStatusCode.UNSET);
    expect(tried.attributes).toMatchObject({ 'redis_lock.acquired': false, 'redis_lock.wait_timeout_ms': 0 });
  });

  it('names the kind of read/write locks and semaphores', async () => {
    await (await locks.readWrite('doc').read()).release();
    await (await locks.semaphore('pool', 2).acquire()).release();
    expect(spans('lock.acquire').map((s) => s.attributes['redis_lock.kind'])).toEqual(['read', 'semaphore']);
  });

  it('gives a @WithLock method a lock.held span with the template and the method', async () => {
    const inner = await app.get(LedgerService).post('acct-9');
    const [acquire] = spans('lock.acquire');
    const [held] = spans('lock.held');
    expect(acquire.attributes).toMatchObject({ 'redis_lock.key': 'ledger:acct-9', 'redis_lock.key_pattern': 'ledger:<0>' });
    expect(held.attributes).toMatchObject({ 'redis_lock.key_pattern': 'ledger:<0>', 'code.function': 'LedgerService.post()' });
    expect(inner).toBe(held.spanContext().spanId);
  });

  it('gives a @WithRequestLock route a lock.held span around the handler', async () => {
    const http = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix('otel-http') })],
      controllers: [ReportsController],
    }).compile();
    const server = http.createNestApplication({ logger: false });
    await server.listen(0, '127.0.0.1');
    try {
      const response = await fetch(`${(await server.getUrl()).replace('[::1]', '127.0.0.1')}/reports/r-1`);
      const body = (await response.json()) as { id: string; spanId?: string };
      expect(response.status).toBe(200);
      const [acquire] = spans('lock.acquire');
      const [held] = spans('lock.held');
      expect(acquire.attributes).toMatchObject({ 'redis_lock.key': 'report:r-1', 'redis_lock.key_pattern': 'report:<params.id>' });
      expect(held.attributes).toMatchObject({
        'redis_lock.key': 'report:r-1',
        'redis_lock.key_pattern': 'report:<params.id>',
        'code.function': 'ReportsController.build()',
        'redis_lock.fencing_token': acquire.attributes['redis_lock.fencing_token'],
      });
      expect(body).toEqual({ id: 'r-1', spanId: held.spanContext().spanId }); // the handler ran inside it
    } finally {
      await server.close();
    }
  });

  it('carries the trace from schedule to the handler through the job', async () => {
    const seen: Array<{ traceId?: string; spanId?: string }> = [];
    const consumer = queue.consume('traced', () => {
      const span = trace.getActiveSpan()?.spanContext();
      seen.push({ traceId: span?.traceId, spanId: span?.spanId });
    });
    try {
      const request = await inRequestSpan(async (span) => {
        await queue.schedule('traced', { n: 1 }, { id: 'job-1', delay: 50 });
        return span.spanContext();
      });
      await waitFor(() => spans('process traced').length === 1, 10_000, 'the handler span');

      const [schedule] = spans('schedule traced');
      const [handled] = spans('process traced');
      expect(schedule.kind).toBe(SpanKind.PRODUCER);
      expect(schedule.parentSpanContext?.spanId).toBe(request.spanId);
      expect(handled.kind).toBe(SpanKind.CONSUMER);
      expect(handled.spanContext().traceId).toBe(request.traceId);
      expect(handled.parentSpanContext?.spanId).toBe(schedule.spanContext().spanId);
      expect(handled.attributes).toMatchObject({
        'messaging.destination.name': 'traced',
        'messaging.message.id': 'job-1',
        'messaging.operation.type': 'process',
        'redis_lock.job.attempt': 1,
      });
      expect(seen).toEqual([{ traceId: request.traceId, spanId: handled.spanContext().spanId }]);
    } finally {
      await consumer.close();
    }
  });

  it('stores the traceparent in the job, and marks a failing handler span as an error', async () => {
    const consumer = queue.consume('failing', () => {
      throw new Error('boom');
    });
    try {
      await inRequestSpan(() => queue.schedule('failing', { n: 2 }, { id: 'bad', delay: 60_000 }));
      const keys = new RedisKeySpace(keyPrefix).topic('failing');
      const body = await app.get(RedisConnection).client.hget(keys.jobs, 'bad');
      const [schedule] = spans('schedule failing');
      const { traceId, spanId } = schedule.spanContext();
      expect(decodeJob(body!).traceparent).toBe(`00-${traceId}-${spanId}-01`);
      expect(decodeJob(body!).payload).toEqual({ n: 2 });

      await queue.reschedule('failing', 'bad', { delay: 0 });
      await waitFor(() => spans('process failing').length === 1, 10_000, 'the handler span');
      const [handled] = spans('process failing');
      expect(handled.status).toEqual({ code: SpanStatusCode.ERROR, message: 'boom' });
      expect(handled.events.map((e) => e.name)).toContain('exception');
      await waitFor(async () => (await queue.stats('failing')).dead === 1, 10_000, 'the dead letter');
      const [dead] = await queue.deadLetters('failing');
      expect(dead).toMatchObject({ id: 'bad', payload: { n: 2 }, lastError: 'Error: boom' });
    } finally {
      await consumer.close();
    }
  });

  it('ends the handler span of a revoked Proxy thrown (instanceof throws on it) and records the failure', async () => {
    const consumer = queue.consume(
      'revoked-traced',
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        throw proxy;
      },
      { visibilityTimeout: 600_000 },
    );
    try {
      await queue.schedule('revoked-traced', 1, { id: 'r1' });
      await waitFor(async () => (await queue.stats('revoked-traced')).dead === 1, 15_000, 'the dead letter');
      const [dead] = await queue.deadLetters('revoked-traced');
      expect(dead.lastError).toBe('<a thrown value that cannot be printed>');
      await waitFor(() => spans('process revoked-traced').length === 1, 10_000, 'the handler span');
      expect(spans('process revoked-traced')[0].status).toEqual({
        code: SpanStatusCode.ERROR,
        message: '<a thrown value that cannot be printed>',
      });
    } finally {
      await consumer.close();
    }
  });

  it('creates no span and stores no trace context with tracing: false', async () => {
    const quietPrefix = uniquePrefix('otel-off');
    const quiet = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: quietPrefix, tracing: false })],
    }).compile();
    await quiet.init();
    try {
      await inRequestSpan(async () => {
        await quiet.get(LockService).using('k', () => undefined);
        await quiet.get(DelayQueueService).schedule('quiet', 1, { id: 'q', delay: 60_000 });
      });
      expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['request']);
      const keys = new RedisKeySpace(quietPrefix).topic('quiet');
      const body = await quiet.get(RedisConnection).client.hget(keys.jobs, 'q');
      expect(body).not.toContain('"t":');
      expect(decodeJob(body!)).toMatchObject({ payload: 1, traceparent: undefined });
    } finally {
      await quiet.close();
    }
  });

  it('falls back to no tracing when @opentelemetry/api cannot be loaded', () => {
    const missing = tracingFrom(() => {
      throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
    });
    expect(missing).toBe(NO_TRACING);
    expect(missing.enabled).toBe(false);
    expect(tracingFrom(() => otelApi).enabled).toBe(true);
  });
});
