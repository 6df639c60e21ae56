/** Instance property through which Nest injects the `LockService` that `@WithLock` methods use. Internal. */
export const LOCK_SERVICE_PROPERTY = Symbol('nestjs-redis-lock:lock-service');

/** Metadata on a `@WithLock` method (the wrapper function): its key source and options. */
export const WITH_LOCK_METADATA = 'nestjs-redis-lock:with_lock';

/** Metadata on a handler or controller class: the `@WithRequestLock` declaration. */
export const WITH_REQUEST_LOCK_METADATA = 'nestjs-redis-lock:with_request_lock';
