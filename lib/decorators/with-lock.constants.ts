/**
 * Instance property through which Nest injects the `LockSections` that `@WithLock` methods run in.
 * Internal. A class whose module cannot see `RedisLockModule` fails at bootstrap with Nest's error
 * naming the class and this property, so its description says what to do.
 */
export const LOCK_SECTIONS_PROPERTY = Symbol(
  '@WithLock needs RedisLockModule: register RedisLockModule.forRoot({ isGlobal: true, ... }) (or forRootAsync) in the root module, ' +
    'or import here a module of yours that imports RedisLockModule.forRoot(...) and exports RedisLockModule',
);

/** Metadata on a handler or controller class: the `@WithRequestLock` declaration. */
export const WITH_REQUEST_LOCK_METADATA = 'nestjs-redis-lock:with_request_lock';
