/** Injection token of the validated, defaulted module configuration. Internal. */
export const REDIS_LOCK_CONFIG = Symbol('nestjs-redis-lock:config');
