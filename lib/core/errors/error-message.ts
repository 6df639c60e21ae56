/**
 * The message of whatever a promise rejected with or a callback threw: an `Error`'s message, else
 * the value as a string (a library may reject with a string, `undefined` or a plain object).
 */
export function errorMessage(error: unknown): string {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? message : String(error);
}
