import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * A `@WithLock` / `@WithRequestLock` key template that can never produce a key: bad syntax, an
 * argument index the method does not have, or a property path into a parameter declared as a
 * primitive. Thrown when the decorator is applied (class definition, before the application starts),
 * so a typo never reaches the first call. Caught as `InvalidOptionsError` (not exported on its own).
 */
export class InvalidLockKeyTemplateError extends InvalidOptionsError {
  override readonly code = 'INVALID_LOCK_KEY_TEMPLATE';

  constructor(
    /** The template as written (or a description of the key source when it is not a string). */
    readonly template: string,
    /** Where it was written, e.g. `@WithLock on OrdersService.pay()`. */
    readonly location: string,
    problem: string,
  ) {
    super(location, problem, `Invalid lock key template ${JSON.stringify(template)} in ${location}: ${problem}.`);
  }
}
