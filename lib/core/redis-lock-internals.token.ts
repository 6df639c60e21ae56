/**
 * Injection token of a `RedisLockModule`'s internal pieces (the decorators' services, the connection,
 * the inspectors), not public API: no entry point exports it. The module exports this token instead
 * of the pieces, so an importing module sees only the public services, while `@WithLock`,
 * `@OnOneInstance`, `RequestLockInterceptor` and the add-ons (health, dashboard) reach what they run on
 * through it. Its description is what Nest's bootstrap error names when a module cannot see
 * `RedisLockModule`, so it names the module (and no package prefix). `Symbol.for`: the same token in
 * both builds of the package (core/runtime/process-shared.ts).
 */
export const REDIS_LOCK_INTERNALS = Symbol.for('RedisLockModule internals');
