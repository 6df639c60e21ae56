/**
 * Instance property through which Nest injects the `LockSections` that `@WithLock` methods run in.
 * Internal. Its description names `LockService`, which users know: a module that cannot see
 * `RedisLockModule` fails at bootstrap with Nest's error naming the class and this property.
 */
export const LOCK_SECTIONS_PROPERTY = Symbol('nestjs-redis-lock:LockService sections');

/** Metadata on a handler or controller class: the `@WithRequestLock` declaration. */
export const WITH_REQUEST_LOCK_METADATA = 'nestjs-redis-lock:with_request_lock';
