/**
 * The tracing probe of the ESM app: the OpenTelemetry SDK registered by the application before
 * bootstrap (in-memory exporter), then the package's spans looked for. The app imports the API as
 * ESM while the package loads it with require(): both must share the global tracer provider.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { TracingProbe } from './app-flavor.js';
import { assert, assertEqual } from './check-list.js';
import { COMPAT_TOPIC } from './compat.module.js';

export function withOpenTelemetry(): TracingProbe {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return {
    label: 'OpenTelemetry SDK with an in-memory exporter',
    install() {
      assert(context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()), 'another context manager is registered');
      assert(trace.setGlobalTracerProvider(provider), 'another tracer provider is registered');
    },
    async verify(checks) {
      await checks.run('OpenTelemetry: lock.acquire, lock.held, schedule and process spans recorded', async () => {
        await provider.forceFlush();
        const spans = exporter.getFinishedSpans();
        const summary = () => spans.map((span) => span.name).join(', ') || 'none';
        const find = (name: string, test: (span: ReadableSpan) => boolean = () => true) => {
          const span = spans.find((candidate) => candidate.name === name && test(candidate));
          assert(span, `no "${name}" span matching the check was recorded; spans: ${summary()}`);
          return span;
        };
        const acquire = find('lock.acquire', (span) => span.attributes['redis_lock.key'] === 'compat:acquire');
        assertEqual(acquire.attributes['redis_lock.acquired'], true, 'lock.acquire span attribute redis_lock.acquired');
        find('lock.held', (span) => span.attributes['redis_lock.key_pattern'] === 'compat-order:<0>');
        const schedule = find(`schedule ${COMPAT_TOPIC}`);
        const handler = find(`process ${COMPAT_TOPIC}`);
        assertEqual(handler.spanContext().traceId, schedule.spanContext().traceId, 'trace id of the handler span (vs the schedule span)');
      });
    },
  };
}
