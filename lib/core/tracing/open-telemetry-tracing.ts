import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { Attributes, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import {
  NO_TRACING,
  type AcquireTraceInfo,
  type HandlerTraceInfo,
  type LockedSpan,
  type RedisLockTracing,
  type TracedLock,
} from './redis-lock-tracing.js';
import { errorMessage } from '../errors/error-message.js';
import { packageRequire } from '../runtime/build-format.js';

const TRACER_NAME = 'nestjs-redis-lock';
/** `messaging.system` of the delayed-job spans. */
const MESSAGING_SYSTEM = 'nestjs-redis-lock';
/** W3C trace context, version 00: `00-<trace id>-<parent span id>-<flags>`. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

let shared: RedisLockTracing | undefined;

/**
 * The process's tracing: OpenTelemetry when `@opentelemetry/api` can be loaded (an optional peer
 * dependency), else `NO_TRACING`. Spans go to whatever tracer provider the application registers;
 * with the API installed but no SDK the lock spans are not started at all (they would be the API's
 * non-recording spans), the delayed-job spans are the API's non-recording spans, which carry the
 * scheduling trace's context into the handler, and are skipped too while no context manager is
 * registered either (nothing could see them).
 */
export function openTelemetryTracing(): RedisLockTracing {
  shared ??= tracingFrom(loadOpenTelemetryApi);
  return shared;
}

/** OpenTelemetry tracing over the API `load` returns, or `NO_TRACING` when it throws (not installed). */
export function tracingFrom(load: () => typeof OpenTelemetryApi): RedisLockTracing {
  let api: typeof OpenTelemetryApi;
  try {
    api = load();
  } catch {
    return NO_TRACING;
  }
  return new OpenTelemetryTracing(api);
}

/**
 * A synchronous optional load, so the package stays free of top-level await (which would stop
 * CommonJS apps from loading the ES module build through require(esm)). The API keeps its state on
 * a global symbol, so this copy sees the tracer provider the application registered through `import`.
 */
function loadOpenTelemetryApi(): typeof OpenTelemetryApi {
  return packageRequire('@opentelemetry/api') as typeof OpenTelemetryApi;
}

/** Spans through `@opentelemetry/api`; see `RedisLockTracing` for what each method wraps. */
class OpenTelemetryTracing implements RedisLockTracing {
  readonly enabled = true;
  private readonly tracer: Tracer;
  /** What the API's global provider delegates to while no SDK has registered one (its no-op provider). */
  private readonly noProvider: unknown;
  /** A context only this class makes, to tell whether `context.with` makes anything active (see `propagating`). */
  private readonly probe: OpenTelemetryApi.Context;
  private readonly probeIsActive: () => boolean;

  constructor(private readonly api: typeof OpenTelemetryApi) {
    // A ProxyTracer: it follows the provider the application registers, even after this line.
    this.tracer = api.trace.getTracer(TRACER_NAME);
    this.noProvider = new api.ProxyTracerProvider().getDelegate();
    this.probe = api.ROOT_CONTEXT.setValue(api.createContextKey('nestjs-redis-lock probe'), true);
    this.probeIsActive = () => api.context.active() === this.probe;
  }

  /**
   * False while no context manager is registered: `context.with` then runs its function in the root
   * context, so no code can see a context made active (nor the trace context a handler's span
   * would carry). Checked per call, like `recording`.
   */
  private get propagating(): boolean {
    return this.api.context.with(this.probe, this.probeIsActive);
  }

  /**
   * False while no tracer provider is registered (the API installed, no SDK): every span would then
   * be a non-recording one carrying its parent's context, so the lock spans, which run on every
   * acquire, are skipped: nothing is recorded or propagated differently, and an acquire saves the
   * span, its context and three closures. Checked per call: a provider registered later
   * is picked up at once.
   */
  get recording(): boolean {
    const provider = this.api.trace.getTracerProvider() as { getDelegate?: () => unknown };
    return typeof provider.getDelegate !== 'function' || provider.getDelegate() !== this.noProvider;
  }

  traceAcquire<T extends TracedLock | null>(info: AcquireTraceInfo, run: () => Promise<T>): Promise<T> {
    if (!this.recording) return run();
    const attributes: Attributes = {
      // Not validated yet (a bad key is rejected inside `run`): describe whatever was passed.
      'redis_lock.key': Array.isArray(info.key) ? info.key.map(String).join(',') : String(info.key),
      'redis_lock.kind': info.kind,
      'redis_lock.wait_timeout_ms': info.waitTimeout,
    };
    if (info.keyPattern !== undefined) attributes['redis_lock.key_pattern'] = info.keyPattern;
    return this.tracer.startActiveSpan('lock.acquire', { attributes }, (span) =>
      run().then(
        (handle) => {
          span.setAttribute('redis_lock.acquired', handle !== null);
          if (handle) span.setAttribute('redis_lock.fencing_token', handle.fencingToken);
          span.end();
          return handle;
        },
        (error: unknown) => {
          span.setAttribute('redis_lock.acquired', false);
          // Not getting a busy lock in time is an outcome the caller handles (409, skip), still worth flagging.
          this.fail(span, error, error instanceof LockAcquireTimeoutError ? 'lock not free in time' : undefined);
          throw error;
        },
      ),
    );
  }

  traceLocked<T>(handle: TracedLock, keyPattern: string | undefined, fn: () => T, codeFunction?: string): T {
    if (!this.recording) return fn();
    const attributes = heldAttributes(handle, keyPattern, codeFunction);
    return this.tracer.startActiveSpan('lock.held', { attributes }, (span) => {
      let result: T;
      try {
        result = fn();
      } catch (error) {
        this.fail(span, error);
        throw error;
      }
      if (!isPromiseLike(result)) {
        span.end();
        return result;
      }
      return Promise.resolve(result).then(
        (value) => {
          if (!handle.held && handle.signal.reason instanceof LockLostError) this.fail(span, handle.signal.reason, 'lock lost while held');
          else span.end();
          return value;
        },
        (error: unknown) => {
          this.fail(span, error);
          throw error;
        },
      ) as T;
    });
  }

  startLocked(handle: TracedLock, keyPattern: string | undefined, codeFunction?: string): LockedSpan {
    if (!this.recording) return NO_TRACING.startLocked(handle, keyPattern, codeFunction);
    const { api } = this;
    const span = this.tracer.startSpan('lock.held', { attributes: heldAttributes(handle, keyPattern, codeFunction) });
    const inSpan = api.trace.setSpan(api.context.active(), span);
    let ended = false;
    return {
      run: (fn) => api.context.with(inSpan, fn),
      end: (error) => {
        if (ended) return;
        ended = true;
        if (error !== undefined) this.fail(span, error);
        else if (!handle.held && handle.signal.reason instanceof LockLostError)
          this.fail(span, handle.signal.reason, 'lock lost while held');
        else span.end();
      },
    };
  }

  traceSchedule<T>(topic: string, jobCount: number, run: (traceparent: string | undefined) => Promise<T>): Promise<T> {
    const attributes: Attributes = {
      'messaging.system': MESSAGING_SYSTEM,
      'messaging.operation.type': 'send',
      'messaging.destination.name': topic,
    };
    if (jobCount !== 1) attributes['messaging.batch.message_count'] = jobCount;
    const options = { kind: this.api.SpanKind.PRODUCER, attributes };
    return this.tracer.startActiveSpan(`schedule ${topic}`, options, (span) =>
      this.endWhenSettled(span, run(this.traceparentOf(span.spanContext()))),
    );
  }

  traceHandler<T>(info: HandlerTraceInfo, run: () => Promise<T>): Promise<T> {
    // With neither a tracer provider nor a context manager the span would be a non-recording one
    // that no code can see: the handler runs as it would inside it, without its span and context.
    if (!this.recording && !this.propagating) return run();
    const { api } = this;
    const attributes: Attributes = {
      'messaging.system': MESSAGING_SYSTEM,
      'messaging.operation.type': 'process',
      'messaging.destination.name': info.topic,
      'messaging.message.id': info.id,
      'redis_lock.job.attempt': info.attempt,
    };
    const scheduledIn = this.contextOf(info.traceparent);
    const options = { kind: api.SpanKind.CONSUMER, attributes };
    return this.tracer.startActiveSpan(`process ${info.topic}`, options, scheduledIn, (span) => this.endWhenSettled(span, run()));
  }

  /** Ends `span` when `pending` settles: OK on resolve, ERROR with the exception on reject. */
  private endWhenSettled<T>(span: Span, pending: Promise<T>): Promise<T> {
    return pending.then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        this.fail(span, error);
        throw error;
      },
    );
  }

  /** Ends `span` as failed, whatever was thrown (a value that cannot be read is recorded by its message only). */
  private fail(span: Span, error: unknown, message?: string): void {
    try {
      if (error instanceof Error) span.recordException(error);
    } catch {
      // A revoked Proxy or a throwing getter: the status below still carries the message.
    }
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: message ?? errorMessage(error) });
    span.end();
  }

  /** The W3C `traceparent` of a span, built directly so it does not depend on a registered propagator. */
  private traceparentOf(spanContext: SpanContext): string | undefined {
    if (!this.api.trace.isSpanContextValid(spanContext)) return undefined;
    const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
    return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
  }

  /** The context a handler's span starts in: the scheduling span's, when the job carries one. */
  private contextOf(traceparent: string | undefined): OpenTelemetryApi.Context {
    const { api } = this;
    const active = api.context.active();
    const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
    if (!match) return active;
    const remote: SpanContext = { traceId: match[1], spanId: match[2], traceFlags: parseInt(match[3], 16), isRemote: true };
    return api.trace.isSpanContextValid(remote) ? api.trace.setSpanContext(active, remote) : active;
  }
}

function heldAttributes(handle: TracedLock, keyPattern: string | undefined, codeFunction: string | undefined): Attributes {
  const attributes: Attributes = {
    'redis_lock.key': handle.key,
    'redis_lock.fencing_token': handle.fencingToken,
  };
  if (keyPattern !== undefined) attributes['redis_lock.key_pattern'] = keyPattern;
  if (codeFunction !== undefined) attributes['code.function'] = codeFunction;
  return attributes;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
