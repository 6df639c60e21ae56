import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * A module of this package that builds on `RedisLockModule` (metrics, health, dashboard) cannot see
 * its providers: `RedisLockModule` is not in the application, or is registered without
 * `isGlobal: true`, so modules other than the one importing it do not see its providers. Caught as
 * `InvalidOptionsError` (not exported on its own).
 */
export class RedisLockModuleNotVisibleError extends InvalidOptionsError {
  override readonly code = 'REDIS_LOCK_MODULE_NOT_VISIBLE';
  /** The providers of `RedisLockModule` it could not get, e.g. `RedisLockEvents`. */
  readonly missing: readonly string[];

  /** `dependencies`: what `user` injected with `@Optional()`, by provider name; the missing ones are `undefined`. */
  constructor(
    /** The module that needs it, e.g. `RedisLockMetricsModule`. */ readonly user: string,
    dependencies: Record<string, unknown>,
  ) {
    const missing = Object.keys(dependencies).filter((name) => dependencies[name] === undefined || dependencies[name] === null);
    super(
      'isGlobal',
      `${user} cannot see RedisLockModule`,
      `${user} needs RedisLockModule (its ${missing.join(', ')}), which it cannot see. Register ` +
        'RedisLockModule.forRoot({ isGlobal: true, ... }) (or forRootAsync({ isGlobal: true, ... })) in the root module ' +
        `of the application, before ${user}.`,
    );
    this.missing = missing;
  }
}

/**
 * Throws `RedisLockModuleNotVisibleError` for `user` unless every dependency, injected with
 * `@Optional()`, is there. Nest's own error would name a class and an argument index only.
 */
export function requireRedisLockModule(user: string, dependencies: Record<string, unknown>): void {
  const isMissing = (value: unknown) => value === undefined || value === null;
  if (Object.values(dependencies).some(isMissing)) throw new RedisLockModuleNotVisibleError(user, dependencies);
}
