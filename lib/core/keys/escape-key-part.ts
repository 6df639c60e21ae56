import { InvalidLockKeyError } from '../errors/invalid-lock-key.error.js';

/** Longest user-supplied name accepted inside a key, in UTF-8 bytes (before escaping). */
export const MAX_KEY_PART_BYTES = 1024;

/**
 * Makes a user-supplied name safe to place inside a Redis hash tag `{...}`.
 *
 * Redis Cluster hashes only the text between the first `{` and the next `}`, so a name containing a
 * brace could move a key to another slot (CROSSSLOT inside a script) or collide with another key.
 * Percent-encoding `%`, `{` and `}` keeps the mapping one-to-one: two different names can never
 * produce the same key.
 */
export function escapeKeyPart(name: unknown, what = 'lock key'): string {
  if (typeof name !== 'string') {
    throw new InvalidLockKeyError(name, `a ${what} must be a string`, what);
  }
  if (name.length === 0) {
    throw new InvalidLockKeyError(name, `a ${what} must not be empty`, what);
  }
  // Length is checked in bytes, the unit Redis and memory budgets care about. A UTF-16 unit is at
  // most 3 UTF-8 bytes, so short names (nearly all) skip the byte count.
  if (name.length * 3 > MAX_KEY_PART_BYTES && Buffer.byteLength(name, 'utf8') > MAX_KEY_PART_BYTES) {
    throw new InvalidLockKeyError(name, `a ${what} may be at most ${MAX_KEY_PART_BYTES} UTF-8 bytes long`, what);
  }
  if (!name.isWellFormed()) {
    throw new InvalidLockKeyError(name, `a ${what} must be well-formed Unicode (it contains a lone surrogate)`, what);
  }
  return NEEDS_ESCAPE.test(name) ? name.replace(/[%{}]/g, (ch) => ESCAPES[ch]) : name;
}

const NEEDS_ESCAPE = /[%{}]/;
const ESCAPES: Record<string, string> = { '%': '%25', '{': '%7B', '}': '%7D' };

/** Reverses `escapeKeyPart`: the name as the user gave it, from the text between a key's braces. */
export function unescapeKeyPart(part: string): string {
  return part.replace(/%(25|7B|7D)/g, (_, code: string) => UNESCAPES[code]);
}

const UNESCAPES: Record<string, string> = { '25': '%', '7B': '{', '7D': '}' };
