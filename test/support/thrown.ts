/** What `call` threw, or undefined when it returned: for specs that then assert on the error. */
export function thrownBy(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** What `call` threw or rejected with, or undefined when it resolved. */
export async function rejectionOf(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** What starting an app with `start` failed with; undefined (the app closed again) when it started. */
export async function startupFailure(start: () => Promise<{ close(): Promise<unknown> }>): Promise<unknown> {
  return rejectionOf(async () => (await start()).close());
}

/**
 * The `type` error that `call` threw: fails the test when `call` returns (naming `input`, what it
 * accepted) and rethrows an error of any other type.
 */
export function refusedWith<E extends Error>(type: abstract new (...args: never[]) => E, call: () => unknown, input: unknown): E {
  try {
    call();
  } catch (error) {
    if (error instanceof type) return error;
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}
