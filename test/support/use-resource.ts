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
 * An object that reads `current()` at each access (methods bound to it): what a describe block
 * declares now and its hooks make later. Throws an error naming `what` while `current()` is undefined.
 */
export function readThrough<T extends object>(what: string, current: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, key) {
      const target = current();
      if (!target) throw new Error(`${what} is not started: read it in a test or in a hook declared after it`);
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
