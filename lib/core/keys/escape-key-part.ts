import { InvalidLockKeyError } from '../errors/invalid-lock-key.error.js';

/**
 * Longest user-supplied name accepted inside a key (a lock or semaphore key, a topic name), in
 * characters (Unicode code points, what a user counts), before escaping. Its Redis key is longer in
 * bytes: up to 4 UTF-8 bytes a character, 3 characters for each escaped `%`, `{` or `}`, plus the
 * prefix and suffixes: at most about 12 KiB, far inside Redis' 512 MB bound on a key.
 */
export const MAX_KEY_PART_CHARS = 1024;

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
  // Length is counted in characters (code points), as the user counts them. A name has at least as
  // many UTF-16 units as code points, so short names (nearly all) skip the count.
  if (name.length > MAX_KEY_PART_CHARS && codePointCount(name) > MAX_KEY_PART_CHARS) {
    throw new InvalidLockKeyError(name, `a ${what} may be at most ${MAX_KEY_PART_CHARS} characters long`, what);
  }
  if (!name.isWellFormed()) {
    throw new InvalidLockKeyError(name, `a ${what} must be well-formed Unicode (it contains a lone surrogate)`, what);
  }
  return NEEDS_ESCAPE.test(name) ? name.replace(/[%{}]/g, (ch) => ESCAPES[ch]) : name;
}

/** Characters of `text`, a surrogate pair counting as one (a lone surrogate counts as one as well). */
function codePointCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

const NEEDS_ESCAPE = /[%{}]/;
const ESCAPES: Record<string, string> = { '%': '%25', '{': '%7B', '}': '%7D' };

/** Reverses `escapeKeyPart`: the name as the user gave it, from the text between a key's braces. */
export function unescapeKeyPart(part: string): string {
  return part.replace(/%(25|7B|7D)/g, (_, code: string) => UNESCAPES[code]);
}

const UNESCAPES: Record<string, string> = { '25': '%', '7B': '{', '7D': '}' };
