import { Inject } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { LockServiceUnavailableError } from '../core/errors/lock-service-unavailable.error.js';
import { REDIS_LOCK_INTERNALS } from '../core/redis-lock-internals.token.js';
import type { OneInstanceLeases } from '../scheduling/one-instance-leases.js';
import type { DecoratorLockRunner } from './decorator-lock-runner.js';

/** The services the wrapping decorators' calls run through, as `REDIS_LOCK_INTERNALS` holds them. */
export interface DecoratorServices {
  /** What `@WithLock` methods run in. */
  readonly lockRunner: DecoratorLockRunner;
  /** What `@OnOneInstance` methods run under. */
  readonly oneInstanceLeases: OneInstanceLeases;
}

/** The method a wrapping decorator is applied to, as its `prepare` sees it when the class is defined. */
interface DecoratedMethod {
  /** The class's prototype. */
  readonly target: object;
  readonly propertyKey: string | symbol;
  /** The method as written (before this decorator wrapped it). */
  readonly original: (...args: unknown[]) => unknown;
  readonly className: string;
  /** `@Decorator on Class.method()`, for messages. */
  readonly location: string;
}

/** How one call of a wrapped method runs: through `service`, with `call()` running the method as written. */
type WrappedCall<S> = (service: S, call: () => unknown, args: unknown[], self: unknown) => unknown;

/** What a method decorator that wraps a provider method says about itself. */
interface MethodWrapping<S> {
  /** The decorator as messages name it: `'@WithLock'`. */
  readonly decorator: string;
  /** What may carry it, in the refusal of a static method: `'a provider'`. */
  readonly carriers: string;
  /** Added to the refusal of a getter or a field, after "is not a method". */
  readonly notAMethodHint?: string;
  /**
   * The application's service that calls run through, picked from `REDIS_LOCK_INTERNALS`, which is
   * injected into every instance of the class under `property`, so a call runs in the application that
   * created the instance (several can share a process).
   */
  readonly service: (services: DecoratorServices) => S;
  /**
   * The instance property `REDIS_LOCK_INTERNALS` is injected under. Its description is what Nest's bootstrap error names when
   * the class's module cannot see `RedisLockModule`, so it says what to do.
   */
  readonly property: symbol;
  /**
   * Checks the decorator's arguments against `method` when the class is defined (a mistake throws there,
   * naming the method) and returns how each call runs, and metadata to define on the wrapper.
   */
  prepare(method: DecoratedMethod): { run: WrappedCall<S>; metadata?: Readonly<Record<string, unknown>> };
}

/**
 * The one scaffold of every method decorator that wraps a provider method (`@WithLock`, `@OnOneInstance`):
 * refuses static methods, getters and fields; has Nest inject the decorator's service into each instance;
 * replaces the method with a `Proxy` whose `apply` runs the call through that service (keeping the
 * method's `name`, `length` and `this`, and always returning a Promise); and copies the metadata of the
 * decorators applied before it (route paths, `SetMetadata`, Swagger) onto the wrapper.
 */
export function wrapProviderMethod<S>(wrapping: MethodWrapping<S>): MethodDecorator {
  const { decorator, service, property } = wrapping;
  return (target, propertyKey, descriptor) => {
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    const location = `${decorator} on ${className}.${String(propertyKey)}()`;
    if (typeof target === 'function') {
      throw new InvalidOptionsError(decorator, `${location} is static; decorate an instance method of ${wrapping.carriers}`);
    }
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') {
      throw new InvalidOptionsError(decorator, `${location} is not a method${wrapping.notAMethodHint ?? ''}`);
    }
    const method = original as (...args: unknown[]) => unknown;
    const { run, metadata } = wrapping.prepare({ target, propertyKey, original: method, className, location });
    injectOnce(target, property);

    const wrapper = new Proxy(method, {
      apply(called, self: Record<symbol, unknown> | undefined, args: unknown[]) {
        return (async () => {
          const services = self?.[property] as DecoratorServices | undefined;
          if (typeof services !== 'object' || services === null) throw new LockServiceUnavailableError(location);
          return run(service(services), () => Reflect.apply(called, self, args), args, self);
        })();
      },
    });
    copyMethodMetadata(method, wrapper);
    for (const [key, value] of Object.entries(metadata ?? {})) Reflect.defineMetadata(key, value, wrapper);
    descriptor.value = wrapper as never;
    return descriptor;
  };
}

/** Has Nest inject `REDIS_LOCK_INTERNALS` under `property` into every instance of the prototype's class (once per class). */
function injectOnce(prototype: object, property: symbol): void {
  const existing: Array<{ key: string | symbol }> = Reflect.getMetadata(PROPERTY_DEPS_METADATA, prototype.constructor) ?? [];
  if (existing.some((dependency) => dependency.key === property)) return;
  Inject(REDIS_LOCK_INTERNALS)(prototype, property);
}

/** Copies every reflect-metadata entry of `from` onto `to`, so decorators applied before the wrapper stay visible. */
function copyMethodMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}
