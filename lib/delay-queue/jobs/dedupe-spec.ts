import type { OptionValidator } from '../../core/options/option-validation.js';
import { keysOf, refuseUnknownKeys } from '../../core/options/known-option-keys.js';
import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import type { DedupeOptions } from '../interfaces/dedupe-options.interface.js';

type DedupeMode = NonNullable<DedupeOptions['mode']>;
import { checkStoredName } from './stored-name.js';

/** Longest dedupe key, in UTF-8 bytes (as a group name: it is stored in a key name and in the job's header). */
export const MAX_DEDUPE_KEY_BYTES = 256;

/** Longest dedupe ttl: 30 days. */
export const MAX_DEDUPE_TTL_MS = 30 * 86_400_000;

const DEDUPE_KEYS = keysOf<DedupeOptions>()(['key', 'ttl', 'mode']);
const MODES: readonly DedupeMode[] = ['throttle', 'debounce'];
/** A mode's letter in the stored form. */
const MODE_CODE: Readonly<Record<DedupeMode, string>> = { throttle: 't', debounce: 'd' };

/**
 * A job's dedupe as it is stored (the header field `dedupe`, job-fields.ts) and sent to the
 * schedule scripts (dedupe-lua-snippet.ts parses it): `<mode letter><ttl ms>:<key>`, e.g.
 * `t60000:product:7`. Carried in the job's tail, it reaches Redis the same way on every path
 * (at once, after a commit, through the outbox relay).
 */
export function encodeDedupe({ mode, ttl, key }: Required<DedupeOptions>): string {
  return `${MODE_CODE[mode]}${ttl}:${key}`;
}

/** A stored dedupe (`encodeDedupe`) read back; undefined for text it did not write. */
export function decodeDedupe(stored: string): Required<DedupeOptions> | undefined {
  const colon = stored.indexOf(':');
  const mode = MODES.find((m) => MODE_CODE[m] === stored[0]);
  const ttl = stored.slice(1, colon);
  if (mode === undefined || colon < 2 || !/^\d+$/.test(ttl)) return undefined;
  return { key: stored.slice(colon + 1), ttl: Number(ttl), mode };
}

/** The key of a stored dedupe (`encodeDedupe`). */
export function dedupeKeyOf(stored: string): string {
  return stored.slice(stored.indexOf(':') + 1);
}

/**
 * The `dedupe` option checked (path `path`): a key as a group name is, a whole ttl from 1 ms to 30
 * days, a mode; with `id` or `replace` refused (the dedupe decides which job a call lands on), and
 * in debounce mode with `delay` or `at` refused (the job is due `ttl` after the last call).
 *
 * @throws InvalidJobError naming the field
 */
export function checkDedupe(
  topic: string,
  path: (name: string) => string,
  validate: OptionValidator,
  value: unknown,
  others: { readonly id?: unknown; readonly replace?: unknown; readonly delay?: unknown; readonly at?: unknown },
): Required<DedupeOptions> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    validate.refuseValue('dedupe', value, "use { key, ttl, mode? }, such as { key: 'product:7', ttl: 60_000 }");
  }
  refuseUnknownKeys(validate.refuse, 'dedupe', value, DEDUPE_KEYS);
  const o = value as Partial<DedupeOptions>;
  const key = checkStoredName(topic, path('dedupe.key'), o.key, MAX_DEDUPE_KEY_BYTES, 'dedupe key', 'product:7');
  const ttl = validate.wholeNumber('dedupe.ttl', o.ttl, {
    min: 1,
    max: MAX_DEDUPE_TTL_MS,
    use: `use a whole number of milliseconds from 1 to ${MAX_DEDUPE_TTL_MS} (30 days)`,
  });
  const mode = validate.oneOf('dedupe.mode', o.mode, MODES, { default: 'throttle' });
  if (others.id !== undefined) {
    throw new InvalidJobError(topic, path('id'), 'is set with `dedupe`, which picks the job a call lands on; give one of them');
  }
  if (others.replace !== undefined) {
    throw new InvalidJobError(
      topic,
      path('replace'),
      "is set with `dedupe`; to replace the payload of the key's waiting job use `mode: 'debounce'`",
    );
  }
  if (mode === 'debounce' && (others.delay !== undefined || others.at !== undefined)) {
    throw new InvalidJobError(
      topic,
      path(others.delay !== undefined ? 'delay' : 'at'),
      "is set with `dedupe` in 'debounce' mode, where the job is due `ttl` ms after the last call; set `dedupe.ttl` instead",
    );
  }
  return { key, ttl, mode };
}
