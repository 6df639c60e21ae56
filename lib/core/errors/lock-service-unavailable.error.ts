import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * A `@WithLock` method was called on an instance that has no `LockService`: the instance was not
 * created by Nest's injector (for example `new OrdersService()` in a test), or the method was
 * detached from its instance (`const pay = service.pay; pay()`). Caught as `InvalidOptionsError`
 * (not exported on its own).
 */
export class LockServiceUnavailableError extends InvalidOptionsError {
  override readonly code = 'LOCK_SERVICE_UNAVAILABLE';

  constructor(/** The decorated method, e.g. `@WithLock on OrdersService.pay()`. */ readonly location: string) {
    super(
      location,
      'called on an instance without a LockService',
      `${location} was called on an instance without a LockService. Let Nest create the instance ` +
        '(register the class as a provider or controller in a module that can see RedisLockModule), ' +
        'and call the method on that instance, not on a detached function reference.',
    );
  }
}
