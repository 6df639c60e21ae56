import { Inject } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { LockServiceUnavailableError } from '../core/errors/lock-service-unavailable.error.js';
import { compileKeySource, parameterShape, type LockKeySource } from '../lock/key-template.js';
import { LockSections } from '../lock/lock-sections.js';
import { keyPatternOf, resolveWithLockOptions, type WithLockOptions } from '../lock/with-lock.js';
import { copyMethodMetadata } from './copy-method-metadata.js';
import { LOCK_SECTIONS_PROPERTY } from './with-lock.constants.js';

/**
 * Runs the method while holding a distributed lock, and releases it when the method's promise
 * settles (inside a transaction: when the transaction ends).
 *
 * The key is a template over the method's arguments, an array of templates (a multi-key lock,
 * taken all or nothing in sorted order), or a function of the arguments:
 * - `'order:<0>'`: the first argument;
 * - `'order:<1.id>'`: property `id` of the second argument (deeper paths: `<1.items.0.sku>`);
 * - `['acct:<0>', 'acct:<1>']`: both keys;
 * - `(from: Account, to: Account) => [from.id, to.id].map((id) => `acct:${id}`)`.
 *
 * Templates are checked when the class is defined: an argument index the method does not have, or
 * a property path into a parameter declared as a primitive, throws `InvalidLockKeyTemplateError`
 * naming the class and method. At call time a missing value rejects with `UnresolvedLockKeyError`
 * and the method does not run.
 *
 * The decorated method always returns a Promise (a sync method's result is resolved into it).
 * Errors it throws pass through untouched. Inside it, `LockContext.current()` gives the key,
 * fencing token and lost-lease signal; a nested `@WithLock` on keys this call already holds runs
 * inside the same hold instead of taking the lock again.
 *
 * The lock is not free within `waitTimeout`: `onLocked` decides (`'throw'` a `LockAcquireTimeoutError`,
 * answered as 409 Conflict over HTTP; `'skip'`; or a fallback function).
 *
 * @example
 * \@Injectable()
 * export class PaymentsService {
 *   \@WithLock('order:<0>', { waitTimeout: 2_000 })
 *   async capture(orderId: string) {
 *     const { fencingToken } = LockContext.current()!;
 *     await this.orders.markCaptured(orderId, fencingToken);
 *   }
 *
 *   \@WithLock('report:daily', { waitTimeout: 0, onLocked: 'skip' })   // one instance runs it, the others skip
 *   async buildDailyReport() {}
 * }
 */
export function WithLock(key: LockKeySource, options?: WithLockOptions): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    const location = `@WithLock on ${className}.${String(propertyKey)}()`;
    if (typeof target === 'function') {
      throw new InvalidOptionsError('@WithLock', `${location} is static; decorate an instance method of a provider or controller`);
    }
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') {
      throw new InvalidOptionsError('@WithLock', `${location} is not a method (getters and fields cannot be locked)`);
    }

    const keyOf = compileKeySource<{ args: unknown[]; self: unknown }>(key, {
      root: 'argument',
      location,
      shape: parameterShape(target, propertyKey, original),
      rootOf: ({ args }, placeholder) => ({ value: args[placeholder.index!], name: `argument ${placeholder.index}` }),
      callFn: (fn, { args, self }) => fn.apply(self, args),
    });
    const resolved = resolveWithLockOptions(options, location, keyPatternOf(key, `${className}.${String(propertyKey)}()`));
    injectLockSections(target);

    const wrapper = new Proxy(original as (...args: unknown[]) => unknown, {
      apply(method, self: Record<symbol, unknown> | undefined, args: unknown[]) {
        return (async () => {
          const sections = self?.[LOCK_SECTIONS_PROPERTY] as LockSections | undefined;
          if (typeof sections?.run !== 'function') throw new LockServiceUnavailableError(location);
          const lockKey = keyOf({ args, self });
          return sections.run(lockKey, resolved, args, () => Reflect.apply(method, self, args));
        })();
      },
    });
    copyMethodMetadata(original, wrapper);
    descriptor.value = wrapper as never;
    return descriptor;
  };
}

/**
 * Asks Nest to inject the module's `LockSections` into every instance of the class, under a symbol,
 * so the wrapper runs in the lock service of the application that created the instance (several
 * applications can share one process, e.g. in tests). A module that cannot see `RedisLockModule`
 * fails at bootstrap with Nest's "can't resolve dependencies" error naming the class.
 */
function injectLockSections(prototype: object): void {
  const existing: Array<{ key: string | symbol }> =
    Reflect.getMetadata(PROPERTY_DEPS_METADATA, prototype.constructor) ?? [];
  if (existing.some((dependency) => dependency.key === LOCK_SECTIONS_PROPERTY)) return;
  Inject(LockSections)(prototype, LOCK_SECTIONS_PROPERTY);
}
