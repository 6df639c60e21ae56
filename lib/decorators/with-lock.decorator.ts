import { compileKeySource, parameterShape, type LockKeySource } from './key-template.js';
import type { DecoratorLockRunner } from './decorator-lock-runner.js';
import { LOCK_RUNNER_PROPERTY } from './decorators.constants.js';
import { keyPatternOf, resolveWithLockOptions, type WithLockOptions } from './with-lock-options.js';
import { wrapProviderMethod } from './wrap-provider-method.js';

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
  return wrapProviderMethod<DecoratorLockRunner>({
    decorator: '@WithLock',
    carriers: 'a provider or controller',
    notAMethodHint: ' (getters and fields cannot be locked)',
    service: (services) => services.lockRunner,
    property: LOCK_RUNNER_PROPERTY,
    prepare: ({ target, propertyKey, original, className, location }) => {
      const keyOf = compileKeySource<{ args: unknown[]; self: unknown }>(key, {
        root: 'argument',
        location,
        shape: parameterShape(target, propertyKey, original),
        rootOf: ({ args }, placeholder) => ({ value: args[placeholder.index!], name: `argument ${placeholder.index}` }),
        callFn: (fn, { args, self }) => fn.apply(self, args),
      });
      const resolved = resolveWithLockOptions(options, location, keyPatternOf(key, `${className}.${String(propertyKey)}()`));
      return { run: (runner, call, args, self) => runner.run(keyOf({ args, self }), resolved, args, call) };
    },
  });
}
