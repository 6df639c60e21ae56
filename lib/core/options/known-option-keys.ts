import type { RefuseOption } from './option-validation.js';

/**
 * The keys of an options interface `T`, listed once beside the check that uses them: the compiler
 * refuses a list that leaves out a key of `T` (the missing key is named in the type error) or names
 * one `T` does not have, so the list cannot drift from the interface.
 *
 * @example
 * const LOCK_KEYS = keysOf<LockDefaults>()(['leaseTime', 'waitTimeout', 'watchdog', 'fair', 'syncReplicas']);
 */
export function keysOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & ([Exclude<keyof T & string, K[number]>] extends [never] ? unknown : { missingKeys: Exclude<keyof T & string, K[number]> }),
  ): readonly (keyof T & string)[] => keys;
}

/**
 * Refuses the first key of `value` (a plain options object at path `option`; '' for the top level)
 * that is not in `known`, naming its full path, the known key it most likely meant and the keys that
 * level accepts. A misspelt key (`keyprefix`) would otherwise be ignored and its default used in silence.
 * Anything that is not a non-null object is left to the value checks.
 */
export function refuseUnknownKeys(refuse: RefuseOption, option: string, value: unknown, known: readonly string[]): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const suggestion = suggestOptionKey(key, known);
    const hint = suggestion === undefined ? '' : ` (did you mean \`${suggestion}\`?)`;
    const level = option === '' ? 'the options' : `the options of \`${option}\``;
    refuse(option === '' ? key : `${option}.${key}`, `unknown option${hint}, which would be ignored; ${level} are: ${known.join(', ')}`);
  }
}

/**
 * The known key `given` most likely misspells: one that differs only in case, else the closest by
 * edit distance (insertions, deletions, substitutions and swaps of two neighbours, case ignored)
 * within a third of its length (at least 1, at most 3). Undefined when none is that close.
 */
export function suggestOptionKey(given: string, known: readonly string[]): string | undefined {
  const lower = given.toLowerCase();
  const sameLetters = known.find((key) => key.toLowerCase() === lower);
  if (sameLetters !== undefined) return sameLetters;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const key of known) {
    const limit = Math.min(3, Math.max(1, Math.floor(key.length / 3)));
    const distance = editDistance(lower, key.toLowerCase());
    if (distance <= limit && distance < bestDistance) {
      best = key;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance (Levenshtein plus transposition of adjacent characters). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
