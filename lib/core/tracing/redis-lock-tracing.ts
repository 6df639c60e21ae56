/** What a span needs of a held lock: structurally, any `TracedLock`. */
export interface TracedLock {
  readonly key: string;
  readonly fencingToken: string;
  /** False once released or lost. */
  readonly held: boolean;
  /** Aborts, with a `LockLostError` reason, when the lock is lost. */
  readonly signal: AbortSignal;
}

/** What a traced acquire is about (span attributes). */
export interface AcquireTraceInfo {
  /** The name the caller gave (for a multi-key lock: every key, sorted). */
  readonly key: string | readonly string[];
  readonly keyPattern?: string;
  /** The lock's kind (`mutex`, `fair`, `semaphore`, … as the lock engine names them), or a read/write lock's side (`read`, `write`). */
  readonly kind: string;
  readonly waitTimeout: number;
}

/** A `lock.held` span opened by hand, for callers that cannot wrap one function (the HTTP interceptor). */
export interface LockedSpan {
  /** Runs `fn` with the span as the active span. */
  run<T>(fn: () => T): T;
  /** Ends the span (ERROR with `error` when given); later calls do nothing. */
  end(error?: unknown): void;
}

/** What a traced handler run is about. */
export interface HandlerTraceInfo {
  readonly topic: string;
  readonly id: string;
  readonly attempt: number;
  /** W3C `traceparent` of the `schedule` call, carried in the job; the handler's span continues that trace. */
  readonly traceparent?: string;
}

/**
 * Spans around the library's operations. The OpenTelemetry implementation is used when
 * `@opentelemetry/api` is installed; otherwise `NO_TRACING`, whose methods just call through, so an
 * application without OpenTelemetry pays one property read per operation.
 */
export interface RedisLockTracing {
  /** False for `NO_TRACING`: callers skip even building the info objects. */
  readonly enabled: boolean;
  /**
   * False while spans would not be recorded by anyone (OpenTelemetry with no tracer provider
   * registered): the lock's hot path then skips its spans too. Absent: the same as `enabled`.
   */
  readonly recording?: boolean;
  /** A `lock.acquire` span around `run`, with the fencing token once held. */
  traceAcquire<T extends TracedLock | null>(info: AcquireTraceInfo, run: () => Promise<T>): Promise<T>;
  /** A `lock.held` span around the locked call `fn` (sync or async), in the span's context. */
  traceLocked<T>(handle: TracedLock, keyPattern: string | undefined, fn: () => T, codeFunction?: string): T;
  /** The same span as `traceLocked`, opened now and ended by the caller. */
  startLocked(handle: TracedLock, keyPattern: string | undefined, codeFunction?: string): LockedSpan;
  /**
   * A `job.schedule` span (PRODUCER) around `run`, which receives the `traceparent` to store with the
   * jobs (undefined when the span is not sampled or cannot be propagated).
   */
  traceSchedule<T>(topic: string, jobCount: number, run: (traceparent: string | undefined) => Promise<T>): Promise<T>;
  /** A `job.handle` span (CONSUMER) around a handler run, child of the scheduling trace. */
  traceHandler<T>(info: HandlerTraceInfo, run: () => Promise<T>): Promise<T>;
}

/** Tracing off: every method calls straight through. */
export const NO_TRACING: RedisLockTracing = {
  enabled: false,
  traceAcquire: (_info, run) => run(),
  traceLocked: (_handle, _pattern, fn) => fn(),
  startLocked: () => ({ run: (fn) => fn(), end: () => undefined }),
  traceSchedule: (_topic, _count, run) => run(undefined),
  traceHandler: (_info, run) => run(),
};

/**
 * Injection token of the `RedisLockTracing` the services trace with: OpenTelemetry when `tracing` is
 * on and `@opentelemetry/api` is installed, else `NO_TRACING`. Override it to trace elsewhere.
 */
export const REDIS_LOCK_TRACING = Symbol.for('nestjs-redis-lock:tracing');
