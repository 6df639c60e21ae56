import { jest } from '@jest/globals';

/**
 * Something a describe block's tests share: made by `start` in a `beforeAll`, let go by `stop` in an
 * `afterAll` (Jest runs a block's `afterAll` hooks in the order they were declared). The returned
 * object reads through to it at each access (methods bound to it), so tests use it as they would the
 * thing itself; read before the hook ran, it throws an error naming `what`.
 */
export function useResource<T extends object>(what: string, start: () => Promise<T>, stop: (resource: T) => unknown): T {
  let resource: T | undefined;
  beforeAll(async () => {
    resource = await start();
  });
  afterAll(async () => {
    if (resource) await stop(resource);
  });
  return readThrough(what, () => resource);
}

/**
 * An object that reads `current()` at each access: what a describe block declares now and its hooks
 * make later. Methods come bound to it; writes, deletes, `in` and spreading go to it, so `jest.spyOn`
 * through the object replaces the method of the thing itself and returns that spy. Throws an error naming `what`
 * while `current()` is undefined.
 */
export function readThrough<T extends object>(what: string, current: () => T | undefined): T {
  const target = (): T => {
    const resource = current();
    if (!resource) throw new Error(`${what} is not started: read it in a test or in a hook declared after it`);
    return resource;
  };
  return new Proxy({} as T, {
    get(_, key) {
      const resource = target();
      const value: unknown = Reflect.get(resource, key);
      return typeof value === 'function' && !jest.isMockFunction(value) ? value.bind(resource) : value;
    },
    set: (_, key, value) => Reflect.set(target(), key, value),
    deleteProperty: (_, key) => Reflect.deleteProperty(target(), key),
    // `key in object` and spreading read the thing too (the proxy's own target stays empty, so
    // descriptors are handed out as configurable, as the Proxy invariants require).
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor(_, key) {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      return descriptor && { ...descriptor, configurable: true };
    },
  });
}
