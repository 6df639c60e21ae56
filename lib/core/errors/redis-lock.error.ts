/**
 * Base class of every error this library throws. Catch it to handle all of them at once;
 * `code` is stable across versions and safe to switch on.
 */
export abstract class RedisLockError extends Error {
  /** Stable identifier of the error (`'LOCK_LOST'`, `'INVALID_JOB'`, …): switch on it rather than on the message. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    Object.defineProperty(this, ERROR_CLASSES, { value: classNamesOf(new.target), enumerable: false });
  }

  /**
   * `error instanceof LockLostError` (any class of this library) is true also for an error thrown by
   * the package's other build (an app that loads it both through `import` and `require`): besides
   * the prototype chain, it accepts an error of this library whose class, or a base class of it,
   * has this class's name. Never throws: a value whose prototype or properties cannot be read (a
   * revoked Proxy, a throwing getter) is no instance, so a check on whatever a handler threw is safe.
   */
  static override [Symbol.hasInstance]<T>(this: abstract new (...args: never[]) => T, value: unknown): value is T {
    try {
      if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
      const names = (value as { [ERROR_CLASSES]?: unknown } | null | undefined)?.[ERROR_CLASSES];
      return Array.isArray(names) && names.includes(this.name);
    } catch {
      return false;
    }
  }
}

/** The names of an error's class and its base classes up to RedisLockError: the same in both builds. */
const ERROR_CLASSES = Symbol.for('nestjs-redis-lock:error-classes');

/** A class, as its prototype chain is walked (constructors are functions with a name). */
type AnyClass = abstract new (...args: never[]) => unknown;

function classNamesOf(errorClass: AnyClass): readonly string[] {
  const names: string[] = [];
  for (let c: AnyClass | null = errorClass; c && c !== Error; c = Object.getPrototypeOf(c) as AnyClass | null) names.push(c.name);
  return Object.freeze(names);
}
