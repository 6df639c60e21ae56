/**
 * The one definition of a stored job's header: every field a job carries besides its payload, with
 * the one-letter code it is stored under. The TypeScript codec (job-codec.ts) and the Lua reader and
 * writer every script uses (scripts/job-header-lua-snippet.ts) are both built from this table; no
 * other file reads or writes a header.
 *
 * A stored job (format 2, one field of the topic's `jobs` hash):
 *
 *   '2' ( US <code> <value> )* RS <payload JSON>
 *
 * US is the unit separator (0x1f), RS the record separator (0x1e). A value never holds a control
 * character: numbers are digits, texts are checked at schedule (a group holds none, a traceparent is
 * hex and dashes) and JSON escapes every control character, as does the payload's JSON. So the first
 * RS ends the header, and `US <code>` before it finds a field, with plain string searches that
 * never look into the payload (Lua never decodes it: cjson would round numbers to 14 digits and turn
 * `[]` into `{}`). The required fields come first, always in the table's order (the claim rewrites
 * the first two with one anchored match, as fast as it read format 1); an optional field is left out
 * when the job has none.
 *
 * Format 1 (release 0.1, still read everywhere, rewritten as format 2 by the first script that
 * changes the job) was order-sensitive JSON with the same codes,
 * `{"g":…,"a":…,"c":…,"m":…,"b":…,["q":…,]["t":…,]["o":…,]"e":…,"p":<payload>}`,
 * and the same values (`null` for an absent `m`, `b` or `e`).
 */
export const JOB_FORMAT_VERSION = '2';

/** Ends the header: what follows is the payload's JSON. */
export const HEADER_END = '\x1e';
/** Opens each header field, before its code. */
export const FIELD_START = '\x1f';

/**
 * How a value is stored: `uint` decimal digits; `text` a string without control characters, quotes or
 * backslashes, stored as is; `json` JSON text (a string, an array: never with a raw control character).
 */
export type JobFieldType = 'uint' | 'text' | 'json';

export interface JobField {
  /** Its name in the codec's `DecodedJob` and in the Lua header table. */
  readonly name: string;
  /** The one character it is stored under (format 1 used the same ones as JSON keys). */
  readonly code: string;
  readonly type: JobFieldType;
  /** Always stored, before every optional field (the table lists the required ones first). */
  readonly required?: true;
  /** A required field's value in a job just stored (createdAt: the server's time, given by the store). */
  readonly initial?: string;
  /** Who writes it: `schedule` (the tail prepareJob encodes), or the script(s) that change it. */
  readonly writtenBy: string;
}

/** The fields in the order they are written: the required ones first. */
export const JOB_FIELDS = [
  { name: 'token', code: 'g', type: 'uint', required: true, initial: '0', writtenBy: 'claim (a new claim token per delivery)' },
  { name: 'attempts', code: 'a', type: 'uint', required: true, initial: '0', writtenBy: 'claim (+1), release (-1), retry-dead (0)' },
  { name: 'createdAt', code: 'c', type: 'uint', required: true, writtenBy: 'store-job snippet (server ms)' },
  { name: 'group', code: 'q', type: 'text', writtenBy: 'schedule' },
  { name: 'maxAttempts', code: 'm', type: 'uint', writtenBy: 'schedule' },
  { name: 'backoff', code: 'b', type: 'json', writtenBy: 'schedule ([delay, factor, maxDelay, jitter])' },
  { name: 'dedupe', code: 'd', type: 'text', writtenBy: 'schedule (dedupe-spec.ts: mode, ttl and key)' },
  { name: 'traceparent', code: 't', type: 'text', writtenBy: 'schedule (W3C traceparent of the schedule span)' },
  { name: 'priority', code: 'r', type: 'uint', writtenBy: 'schedule (absent for 0: a topic that never uses priorities stores nothing)' },
  { name: 'progress', code: 'o', type: 'json', writtenBy: 'set-progress (the progress JSON, as a JSON string)' },
  { name: 'lastError', code: 'e', type: 'json', writtenBy: 'fail, bury (message as a JSON string, or [message, stack])' },
] as const satisfies readonly JobField[];

export type JobFieldName = (typeof JOB_FIELDS)[number]['name'];

/** The header's fields by name, as stored text (absent: an optional field the job does not have). */
export type JobHeaderFields = Partial<Record<JobFieldName, string>>;
