import { compileKeySource, parameterShape, type LockKeySource } from './key-template.js';
import type { DecoratorLockRunner } from './decorator-lock-runner.js';
import { LOCK_RUNNER_PROPERTY } from './decorators.constants.js';
import { keyPatternOf, resolveWithLockOptions, type WithLockOptions } from './with-lock-options.js';
import { wrapProviderMethod } from './wrap-provider-method.js';

/**
 * Runs the method while holding a distributed lock on `key` (a template over the arguments such as
 * `'order:<0>'` or `'order:<1.id>'`, an array of them, or a function of the arguments), released when
 * the method's promise settles (inside a transaction: when it ends); `onLocked` decides what a lock not
 * free within `waitTimeout` does. See docs/with-lock-and-transactions.md (`@WithLock`: lock a method).
 *
 * A scheduled method (`@Cron`, `@Interval`) that must run on one instance per tick takes
 * `@OnOneInstance`, not `@WithLock(…, { waitTimeout: 0, onLocked: 'skip' })`: the lock only keeps two
 * runs from overlapping, and an instance whose timer fires a few ms after another's finished runs the
 * same tick again (docs/scheduling.md). `onLocked: 'skip'` is right for work that must not overlap
 * itself but may run again at once: a re-entrant sync, a cache refresh.
 *
 * @example
 * \@Injectable()
 * export class PaymentsService {
 *   constructor(private readonly orders: OrdersRepository) {}
 *
 *   \@WithLock('order:<0>', { waitTimeout: 2_000 })
 *   async capture(orderId: string) {
 *     const { fencingToken } = LockContext.current()!;
 *     await this.orders.markCaptured(orderId, fencingToken);
 *   }
 *
 *   \@WithLock('catalog:refresh', { waitTimeout: 0, onLocked: 'skip' })   // never two refreshes at once; a call during one is dropped
 *   async refreshCatalog() {}
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
