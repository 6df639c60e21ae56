import {
  BadRequestException,
  ConflictException,
  HttpException,
  Inject,
  Injectable,
  ServiceUnavailableException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable, catchError, concatMap, defer, dematerialize, finalize, from, materialize, mergeMap, of, throwError } from 'rxjs';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { LockKindConflictError } from '../core/errors/lock-kind-conflict.error.js';
import { LockNotReplicatedError } from '../core/errors/lock-not-replicated.error.js';
import { LockServiceClosedError } from '../core/errors/lock-service-closed.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { UnresolvedLockKeyError } from '../core/errors/unresolved-lock-key.error.js';
import { REDIS_LOCK_INTERNALS } from '../core/redis-lock-internals.token.js';
import type { DecoratorLockRunner, LockSection } from './decorator-lock-runner.js';
import type { DecoratorServices } from './wrap-provider-method.js';
import { LockService } from '../lock/lock.service.js';
import { WITH_REQUEST_LOCK_METADATA } from './decorators.constants.js';
import type { RequestLockDeclaration } from './with-request-lock.decorator.js';
import { processShared } from '../core/runtime/process-shared.js';

/** Execution contexts whose `@WithRequestLock` an interceptor has already taken (global + route-level use) (one per process, shared by
 * both builds: core/runtime/process-shared.ts). */
const claimed = processShared('request-lock-claimed', () => new WeakSet<ExecutionContext>());

/** Execution contexts a subclass of RequestLockInterceptor (the user's own answers) has intercepted (one per process, shared by both
 * builds: core/runtime/process-shared.ts). */
const customised = processShared('request-lock-customised', () => new WeakSet<ExecutionContext>());

/** Where Nest keeps the interceptors of `@UseInterceptors` (`INTERCEPTORS_METADATA` of @nestjs/common/constants). */
const INTERCEPTORS_METADATA = '__interceptors__';

/** Whether `entry` (a class or an instance listed in `@UseInterceptors`) is a subclass of RequestLockInterceptor. */
function isSubclassEntry(entry: unknown): boolean {
  if (typeof entry === 'function') return entry.prototype instanceof RequestLockInterceptor;
  return entry instanceof RequestLockInterceptor && Object.getPrototypeOf(entry) !== RequestLockInterceptor.prototype;
}

/**
 * Takes the locks declared with `@WithRequestLock` and turns lock failures in HTTP contexts into
 * answers (409 Conflict for a lock not free in time, 503 when Redis is unreachable); `RedisLockModule`
 * installs it globally. Subclass it and override `toHttpException` to answer differently, applied with
 * `@UseInterceptors` or as an `APP_INTERCEPTOR`. See docs/with-lock-and-transactions.md (HTTP: 409 Conflict).
 */
@Injectable()
export class RequestLockInterceptor implements NestInterceptor {
  /** Injected as a property so subclasses keep the constructor `(locks, reflector)`. */
  @Inject(REDIS_LOCK_INTERNALS) private readonly internals!: DecoratorServices;

  private get runner(): DecoratorLockRunner {
    return this.internals.lockRunner;
  }

  constructor(
    /** The lock service the request locks are taken with. */
    protected readonly locks: LockService,
    /** Reads the `@WithRequestLock` metadata of the handler and its class. */
    protected readonly reflector: Reflector,
  ) {}

  /**
   * Nest interceptor hook: takes the route's `@WithRequestLock` lock around the handler, and maps lock errors to HTTP answers
   * (`toHttpException`).
   */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (Object.getPrototypeOf(this) !== RequestLockInterceptor.prototype) customised.add(context);
    else if (this.subclassApplies(context)) return next.handle();
    const declaration = this.reflector.getAllAndOverride<RequestLockDeclaration | undefined>(WITH_REQUEST_LOCK_METADATA, [
      context.getHandler(),
      context.getClass(),
    ]);
    const first = declaration !== undefined && !claimed.has(context);
    if (first) claimed.add(context);
    const stream = first ? this.lockedHandler(declaration, context, next) : next.handle();
    if (context.getType() !== 'http') return stream;
    return stream.pipe(
      catchError((error: unknown) => {
        const answer = this.toHttpException(error);
        if (answer) {
          const seconds = this.retryAfterSeconds(error, answer);
          if (seconds !== undefined) setRetryAfter(context, seconds);
        }
        return throwError(() => answer ?? error);
      }),
    );
  }

  /**
   * The HTTP answer for a lock failure, or `undefined` to let the error through unchanged.
   * The original error is kept as the exception's `cause`.
   */
  protected toHttpException(error: unknown): HttpException | undefined {
    if (error instanceof LockAcquireTimeoutError) {
      return conflict(error, 'The resource is locked by another operation in progress. Retry later.');
    }
    if (error instanceof LockKindConflictError) {
      return conflict(error, 'The resource is locked by another operation in progress (as another kind of lock). Retry later.');
    }
    if (error instanceof LockNotReplicatedError) {
      return new ServiceUnavailableException(
        {
          statusCode: 503,
          error: 'Service Unavailable',
          code: error.code,
          message: 'The lock could not be confirmed by Redis replicas (failover or replication lag). Retry later.',
        },
        { cause: error },
      );
    }
    if (error instanceof RedisConnectionError) {
      return new ServiceUnavailableException(
        {
          statusCode: 503,
          error: 'Service Unavailable',
          code: error.code,
          message: 'The lock service cannot reach its Redis server right now. Retry later.',
        },
        { cause: error },
      );
    }
    if (error instanceof LockServiceClosedError) {
      return new ServiceUnavailableException(
        { statusCode: 503, error: 'Service Unavailable', code: error.code, message: 'The server is shutting down. Retry later.' },
        { cause: error },
      );
    }
    return undefined;
  }

  /**
   * The `Retry-After` (whole seconds) sent with the answer `toHttpException` gave for `error`, or
   * `undefined` for none. Default: 1 s with a 409 for a lock not free in time (a lock is usually
   * held briefly, and the holder's lease, renewed by the watchdog, says nothing about when it will be
   * released) and with a 503 for an unreachable Redis; none otherwise. Override to advise another wait.
   */
  protected retryAfterSeconds(error: unknown, answer: HttpException): number | undefined {
    if (answer.getStatus() === 409 && (error instanceof LockAcquireTimeoutError || error instanceof LockKindConflictError)) {
      return RETRY_AFTER_SECONDS;
    }
    if (answer.getStatus() === 503 && error instanceof RedisConnectionError) return RETRY_AFTER_SECONDS;
    return undefined;
  }

  /**
   * Whether a subclass answers for this request instead of this base-class instance: one ran before
   * it (a global subclass registered first, in the root module), or the route lists one with
   * `@UseInterceptors` (it runs after the global interceptors, so it must take the request lock itself).
   */
  private subclassApplies(context: ExecutionContext): boolean {
    if (customised.has(context)) return true;
    const listed = this.reflector.getAllAndMerge<unknown[]>(INTERCEPTORS_METADATA, [context.getHandler(), context.getClass()]);
    return Array.isArray(listed) && listed.some(isSubclassEntry);
  }

  /** The value the key templates of a `@WithRequestLock` read from: the request, or the message data. */
  protected lockSubject(context: ExecutionContext): unknown {
    switch (context.getType()) {
      case 'http':
        return context.switchToHttp().getRequest();
      case 'rpc':
        return context.switchToRpc().getData();
      case 'ws':
        return context.switchToWs().getData();
      default:
        return context.getArgs();
    }
  }

  private lockedHandler(declaration: RequestLockDeclaration, context: ExecutionContext, next: CallHandler) {
    const { options } = declaration;
    return defer(() => {
      let key: string | string[];
      try {
        key = declaration.keyOf(this.lockSubject(context), context);
      } catch (error) {
        // A value missing from the request is the client's mistake, not the server's.
        if (error instanceof UnresolvedLockKeyError && context.getType() === 'http') {
          throw new BadRequestException(
            { statusCode: 400, error: 'Bad Request', code: error.code, message: error.message },
            { cause: error },
          );
        }
        throw error;
      }
      return from(this.runner.enter(key, options)).pipe(
        mergeMap((section) => {
          if (section instanceof LockAcquireTimeoutError) {
            return defer(async () => this.runner.unavailable(options, section, key, context.getArgs()));
          }
          return this.runHandler(section, next);
        }),
      );
    });
  }

  /**
   * Runs the rest of the chain inside the lock section and releases the lock when the stream ends,
   * before the last notification is passed on (so the response is written after the release), or
   * when the subscriber goes away early.
   */
  private runHandler(section: LockSection, next: CallHandler) {
    // A span over the handler while it holds the lock (not for a section an enclosing one already holds).
    const span = this.runner.startHeldSpan(section);
    let released: Promise<void> | undefined;
    const release = () => (released ??= this.runner.leave(section));
    const handler = new Observable<unknown>((subscriber) => {
      // Subscribing inside the section puts the handler's async context in it (LockContext, re-entry).
      const subscribe = () => this.runner.runInside(section, () => next.handle().subscribe(subscriber));
      return span ? span.run(subscribe) : subscribe();
    });
    return handler.pipe(
      materialize(),
      concatMap((notification) => {
        if (notification.kind === 'N') return of(notification);
        span?.end(notification.kind === 'E' ? notification.error : undefined);
        return from(release().then(() => notification));
      }),
      dematerialize(),
      finalize(() => {
        span?.end();
        void release();
      }),
    );
  }
}

/** What a 409 for a busy lock and a 503 for an unreachable Redis ask clients to wait before retrying, in seconds. */
const RETRY_AFTER_SECONDS = 1;

/** Sets Retry-After on the response being answered (Express `res.header`, Fastify `reply.header`). */
function setRetryAfter(context: ExecutionContext, seconds: number): void {
  const response = context.switchToHttp().getResponse<{ header?: (name: string, value: string) => unknown; headersSent?: boolean }>();
  if (response && typeof response.header === 'function' && !response.headersSent) response.header('Retry-After', String(seconds));
}

/** 409 Conflict with the error's stable `code`; the error itself is kept as `cause`. */
function conflict(error: LockAcquireTimeoutError | LockKindConflictError, message: string): ConflictException {
  return new ConflictException({ statusCode: 409, error: 'Conflict', code: error.code, message }, { cause: error });
}
