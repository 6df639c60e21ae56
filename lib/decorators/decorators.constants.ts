/**
 * Instance property through which Nest injects the `DecoratorLockRunner` that `@WithLock` methods run in.
 * Internal. A class whose module cannot see `RedisLockModule` fails at bootstrap with Nest's error
 * naming the class and this property, so its description says what to do.
 */
export const LOCK_RUNNER_PROPERTY = Symbol.for(
  '@WithLock needs RedisLockModule: register RedisLockModule.forRoot({ isGlobal: true, ... }) (or forRootAsync) in the root module, ' +
    'or import here a module of yours that imports RedisLockModule.forRoot(...) and exports RedisLockModule',
);

/**
 * Instance property through which Nest injects the `OneInstanceLeases` that `@OnOneInstance` methods
 * use. Internal. Its description is what Nest's error names when the class's module cannot see `RedisLockModule`.
 */
export const ONE_INSTANCE_LEASES_PROPERTY = Symbol.for(
  '@OnOneInstance needs RedisLockModule: register RedisLockModule.forRoot({ isGlobal: true, ... }) (or forRootAsync) in the root module, ' +
    'or import here a module of yours that imports RedisLockModule.forRoot(...) and exports RedisLockModule',
);

/** Metadata on a handler or controller class: the `@WithRequestLock` declaration. */
export const WITH_REQUEST_LOCK_METADATA = 'nestjs-redis-lock:with_request_lock';
