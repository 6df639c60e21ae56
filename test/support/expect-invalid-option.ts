import { InvalidOptionsError } from '../../lib/index.js';

/** Asserts that `error` is an InvalidOptionsError naming `option`, whose message contains each of `parts`. */
export function expectInvalidOption(error: unknown, option: string, ...parts: string[]): void {
  expect(error).toBeInstanceOf(InvalidOptionsError);
  expect((error as InvalidOptionsError).option).toBe(option);
  for (const part of parts) expect((error as Error).message).toContain(part);
}
