import { Inject } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { LockServiceUnavailableError } from '../core/errors/lock-service-unavailable.error.js';
import { copyMethodMetadata } from '../decorators/copy-method-metadata.js';
import { resolveLeaseDeclaration } from './lease-declaration.js';
import { OneInstanceLeases, runLockKey, type OneInstanceDeclaration } from './one-instance-leases.js';
import { ONE_INSTANCE_LEASES_PROPERTY, ON_ONE_INSTANCE_METADATA } from './scheduling.constants.js';

/** Options of `@OnOneInstance`. */
export interface OnOneInstanceOptions {
  /**
   * The lease's lock name. Default `ClassName.methodName`. Set it when the class or method may be
   * renamed (a deploy where old and new instances run side by side must agree on the key, or both
   * run the calls for a while), when two classes share a name, or when several methods must run on
   * the same instance (give them the same key). A run also holds the lock `<key>:run`.
   */
  key?: string;
  /**
   * Lease in ms (at least 100): renewed every third of it while the application lives; when the
   * holder dies, another instance takes over at its first call after this long. Keep it well above
   * the timer skew between instances and below the period you can afford to miss. Default 30 000.
   */
  ttl?: number;
}

/**
 * Runs the method's calls on one instance of the application only: meant for `@nestjs/schedule`'s
 * `@Cron()` / `@Interval()`, whose timers fire on every instance.
 *
 * The instance that holds the method's lease runs each call; on the others the call resolves
 * `undefined` at once, without running. The lease is taken by the first call that finds it free,
 * renewed while the application lives, handed back on shutdown (another instance takes over at its
 * next call) and taken over `ttl` after its holder died. A run holds its own lock, so a handover
 * never overlaps two runs, and `LockContext.current()` inside gives the run's fencing token and
 * lost-lease `signal`.
 *
 * Unlike `@WithLock(key, { waitTimeout: 0, onLocked: 'skip' })`, which lets whichever instance
 * comes first take a short lock (so a job that ends before the other instances' timers fire runs
 * once per instance), the lease stays with one instance across calls: each tick runs once however
 * the timers are skewed.
 *
 * The method always returns a Promise. Errors it throws pass through untouched. Each skipped call
 * emits `one-instance.skipped` (reason `'not-owner'` or `'still-running'`).
 *
 * @example
 * \@Injectable()
 * export class ReportsService {
 *   \@Cron('0 2 * * *')
 *   \@OnOneInstance({ key: 'reports.daily', ttl: 60_000 })
 *   async buildDailyReport() {
 *     const { fencingToken } = LockContext.current()!;
 *     await this.reports.write(today(), { fencingToken });
 *   }
 * }
 */
export function OnOneInstance(options?: OnOneInstanceOptions): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    const location = `@OnOneInstance on ${className}.${String(propertyKey)}()`;
    if (typeof target === 'function') {
      throw new InvalidOptionsError('@OnOneInstance', `${location} is static; decorate an instance method of a provider`);
    }
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') {
      throw new InvalidOptionsError('@OnOneInstance', `${location} is not a method`);
    }
    const method = `${className}.${String(propertyKey)}`;
    const declaration: OneInstanceDeclaration = {
      ...resolveLeaseDeclaration(options ?? {}, ['key', 'ttl'], method, location, (key) => [runLockKey(key)]),
      method,
    };
    injectLeases(target);

    const wrapper = new Proxy(original as (...args: unknown[]) => unknown, {
      apply(method, self: Record<symbol, unknown> | undefined, args: unknown[]) {
        return (async () => {
          const leases = self?.[ONE_INSTANCE_LEASES_PROPERTY] as OneInstanceLeases | undefined;
          if (typeof leases?.run !== 'function') throw new LockServiceUnavailableError(location);
          return leases.run(declaration, () => Reflect.apply(method, self, args));
        })();
      },
    });
    copyMethodMetadata(original, wrapper);
    Reflect.defineMetadata(ON_ONE_INSTANCE_METADATA, declaration, wrapper);
    descriptor.value = wrapper as never;
    return descriptor;
  };
}

/**
 * Asks Nest to inject the `OneInstanceLeases` into every instance of the class, under a symbol, so
 * the wrapper finds the leases of the application that created the instance (as `@WithLock` does
 * with the `LockService`).
 */
function injectLeases(prototype: object): void {
  const existing: Array<{ key: string | symbol }> = Reflect.getMetadata(PROPERTY_DEPS_METADATA, prototype.constructor) ?? [];
  if (existing.some((dependency) => dependency.key === ONE_INSTANCE_LEASES_PROPERTY)) return;
  Inject(OneInstanceLeases)(prototype, ONE_INSTANCE_LEASES_PROPERTY);
}
