import { jest } from '@jest/globals';
import * as otelApi from '@opentelemetry/api';
import { context, ProxyTracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { tracingFrom } from '../../lib/core/tracing/open-telemetry-tracing.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const info = { topic: 'billing', id: 'job-1', attempt: 1, traceparent: `00-${TRACE_ID}-${SPAN_ID}-01` };

/**
 * A delayed job's handler span with `@opentelemetry/api` installed and no SDK: skipped while no code
 * could see it (no tracer provider, no context manager), kept while a context manager could carry
 * its trace context into what the handler calls. Pure logic over the real API, no Redis involved.
 */
describe('OpenTelemetry: a handler span without an SDK', () => {
  const tracing = tracingFrom(() => otelApi);
  afterEach(() => {
    context.disable();
    trace.disable();
    jest.restoreAllMocks();
  });

  it('no tracer provider and no context manager: the handler runs without a span', async () => {
    const started = jest.spyOn(ProxyTracer.prototype, 'startActiveSpan');
    await expect(tracing.traceHandler(info, async () => trace.getActiveSpan())).resolves.toBeUndefined();
    expect(started).not.toHaveBeenCalled();
  });

  it('a context manager and no tracer provider: the handler sees the scheduling trace’s context', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const seen = await tracing.traceHandler(info, async () => trace.getActiveSpan()?.spanContext());
    expect(seen).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
  });
});
