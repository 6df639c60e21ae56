/** What is kept of a thrown value whose message or string form throws when read. */
export const UNPRINTABLE_FAILURE = '<a thrown value that cannot be printed>';

/**
 * The message of whatever a promise rejected with or a callback threw: an `Error`'s message, else
 * the value as a string (a library may reject with a string, `undefined` or a plain object). Never
 * throws: a value whose message and string form throw when read (a revoked Proxy, a throwing getter)
 * gives UNPRINTABLE_FAILURE.
 */
export function errorMessage(error: unknown): string {
  try {
    const message = (error as { message?: unknown } | null | undefined)?.message;
    if (typeof message === 'string') return message;
  } catch {
    // Its string form may still read.
  }
  try {
    return String(error);
  } catch {
    return UNPRINTABLE_FAILURE;
  }
}

/** The `stack` of whatever was thrown, when it is a non-empty string; undefined otherwise. Never throws. */
export function errorStack(error: unknown): string | undefined {
  try {
    const stack = (error as { stack?: unknown } | null | undefined)?.stack;
    return typeof stack === 'string' && stack.length > 0 ? stack : undefined;
  } catch {
    return undefined;
  }
}
