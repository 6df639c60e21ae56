import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';
import { errorMessage } from '../../core/errors/error-message.js';
import {
  FIELD_START,
  HEADER_END,
  JOB_FIELDS,
  JOB_FORMAT_VERSION,
  type JobField,
  type JobFieldName,
  type JobHeaderFields,
} from './job-fields.js';

/**
 * A stored job, decoded. The stored form and its fields are defined once, in job-fields.ts; this
 * file turns it into objects and back (format 2, and format 1 as release 0.1 wrote it).
 */
export interface DecodedJob<T = unknown> {
  /** Claim token: changes on every claim, so a stale consumer's ack or extend is refused. */
  readonly token: string;
  readonly attempts: number;
  readonly createdAt: number;
  readonly maxAttempts?: number;
  readonly backoff?: Required<BackoffOptions>;
  readonly lastError?: string;
  /** Stack of the last failure, when it was an `Error`. */
  readonly lastErrorStack?: string;
  /** W3C `traceparent` of the `schedule` span, when there was one. */
  readonly traceparent?: string;
  /** The job's group, when it has one. */
  readonly group?: string;
  /** The dedupe it was scheduled with, as stored (dedupe-spec.ts), when it had one. */
  readonly dedupe?: string;
  /** Its priority among due jobs (smaller first); absent for 0. */
  readonly priority?: number;
  /** The last progress a handler recorded (`JobContext.progress`), when there was one. */
  readonly progress?: unknown;
  readonly payload: T;
}

/** Largest progress, as UTF-8 bytes of its JSON: progress is a figure or a few counters, read on every job list. */
export const MAX_PROGRESS_BYTES = 8_192;
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const UNREADABLE = 'Unreadable job body (written by hand or by an incompatible version): ';
const REQUIRED_CODES = (JOB_FIELDS as readonly JobField[]).filter((field) => field.required).map((field) => field.code);
/** A field's name by its code (a plain object: read for every field of every claimed job). */
const NAME_OF_CODE: Readonly<Record<string, JobFieldName | undefined>> = Object.fromEntries(
  JOB_FIELDS.map((field) => [field.code, field.name]),
);
const FIELD_START_CODE = FIELD_START.charCodeAt(0);
/** The claim token's place in a format-2 body: the first field, right after the version and `US g`. */
const TOKEN_AT = JOB_FORMAT_VERSION.length + 1 + JOB_FIELDS[0].code.length;
/** A format-2 field's value: a uint, a text or JSON, never a control character. */
// eslint-disable-next-line no-control-regex
const VALUE_CHARACTERS = /^[^\u0000-\u001f]*$/;

/**
 * Format 1's header, up to its `e` field: fixed order, `m`, `b`, `e` always there (`null` when
 * absent), `q`, `t`, `o` only when set. `o` and `e` hold no bare quote, so `,"e":` and then `,"p":`
 * are the separators.
 */
const V1_HEADER = new RegExp(
  String.raw`^\{"g":(\d+),"a":(\d+),"c":(\d+),"m":(\d+|null),"b":(\[[^\]]*\]|null),` +
    String.raw`(?:"q":"([^"\\]*)",)?(?:"t":"([0-9a-f-]{55})",)?(?:"o":("(?:[^"\\]|\\.)*"),)?"e":`,
);
const V1_PAYLOAD = ',"p":';

/** The options a job is scheduled with that its stored header keeps (job-fields.ts: written by `schedule`). */
export interface ScheduledJobFields {
  readonly maxAttempts?: number;
  readonly backoff?: Required<BackoffOptions>;
  /** Kept only when it is a valid W3C traceparent. */
  readonly traceparent?: string;
  readonly group?: string;
  /** The stored dedupe (dedupe-spec.ts: `encodeDedupe`). */
  readonly dedupe?: string;
  /** Left out when 0. */
  readonly priority?: number;
}

/** The header fields written at schedule, then the payload: what the store-job snippet completes with the creation time. */
export function encodeBodyTail(
  payloadJson: string,
  { maxAttempts, backoff, traceparent, group, priority, dedupe }: ScheduledJobFields = {},
): string {
  return (
    encodeFields({
      maxAttempts: maxAttempts === undefined ? undefined : String(maxAttempts),
      backoff: backoff && JSON.stringify([backoff.delay, backoff.factor, backoff.maxDelay, backoff.jitter]),
      group,
      dedupe,
      priority: priority ? String(priority) : undefined,
      traceparent: traceparent !== undefined && TRACEPARENT.test(traceparent) ? traceparent : undefined,
    }) +
    HEADER_END +
    payloadJson
  );
}

/**
 * Format-2 fields (without the version), in the table's order: the required ones (their initial
 * value when not given; `optionalOnly`: none of them, as in a tail), then those optional ones given.
 */
function encodeFields(fields: JobHeaderFields, optionalOnly = true): string {
  let text = '';
  for (const field of JOB_FIELDS as readonly JobField[]) {
    if (field.required && optionalOnly) continue;
    const value = fields[field.name as JobFieldName] ?? field.initial;
    if (value === undefined) {
      if (field.required) throw new Error(`A stored job always has its ${field.name}`);
      continue;
    }
    if (!VALUE_CHARACTERS.test(value)) throw new Error(`A job's ${field.name} cannot hold a control character`);
    text += FIELD_START + field.code + value;
  }
  return text;
}

/** A whole stored body in format 2: the fields (the required ones at least: createdAt), then the payload's JSON. */
export function encodeJobBody(fields: JobHeaderFields, payloadJson: string): string {
  return JOB_FORMAT_VERSION + encodeFields(fields, false) + HEADER_END + payloadJson;
}

/**
 * The body the store-job snippet makes of a tail (both formats: an outbox row or a repeat schedule
 * written by release 0.1 holds a format-1 tail): the TypeScript twin of its `newJobBody`.
 */
export function bodyOfTail(tail: string, createdAt: number): string {
  if (tail.startsWith(',')) return `{"g":0,"a":0,"c":${createdAt}${tail}`;
  return JOB_FORMAT_VERSION + encodeFields({ createdAt: String(createdAt) }, false) + tail;
}

/** The header fields and the payload's JSON of a stored body (either format), or undefined for a body this version cannot read. */
export function splitBody(body: string): { readonly fields: JobHeaderFields; readonly payloadJson: string } | undefined {
  if (body.startsWith(JOB_FORMAT_VERSION)) {
    const end = body.indexOf(HEADER_END);
    const fields = end < 0 ? undefined : readFields(body, 1, end);
    return fields && { fields, payloadJson: body.slice(end + 1) };
  }
  const v1 = readV1(body);
  return v1 && body.endsWith('}') ? { fields: v1.fields, payloadJson: body.slice(v1.payloadAt, -1) } : undefined;
}

/**
 * The header fields of a header alone (a body up to its payload, as the job list sends it; either
 * format), or undefined.
 */
export function readHeaderText(header: string): JobHeaderFields | undefined {
  if (header.startsWith(JOB_FORMAT_VERSION)) return header.includes(HEADER_END) ? undefined : readFields(header, 1, header.length);
  return readV1(`${header}${V1_PAYLOAD}null}`)?.fields;
}

/**
 * The fields of a format-2 header, `text` from `from` (after the version) to `end` (its RS, or the
 * end of a header alone): the required ones first, in order, or undefined. One pass, no copies but
 * the values: it runs for every claimed job.
 */
function readFields(text: string, from: number, end: number): JobHeaderFields | undefined {
  if (text.charCodeAt(from) !== FIELD_START_CODE) return undefined;
  const fields: Partial<Record<JobFieldName, string>> = {};
  let index = 0;
  for (let at = from; at < end; index++) {
    let next = text.indexOf(FIELD_START, at + 1);
    if (next < 0 || next > end) next = end;
    const code = text.charAt(at + 1);
    if (index < REQUIRED_CODES.length && code !== REQUIRED_CODES[index]) return undefined;
    const name = NAME_OF_CODE[code];
    // A code this version does not know is skipped: a later format may add fields its readers need not see.
    if (name !== undefined) fields[name] = text.slice(at + 2, next);
    at = next;
  }
  return index < REQUIRED_CODES.length ? undefined : fields;
}

function readV1(body: string): { fields: JobHeaderFields; payloadAt: number } | undefined {
  const header = V1_HEADER.exec(body);
  if (!header) return undefined;
  const errorStart = header[0].length;
  // `e` is null, a JSON string or an array of two, which hold no unescaped quote: the first separator after it is ours.
  const separator = body.indexOf(V1_PAYLOAD, errorStart);
  if (separator < 0) return undefined;
  const orNone = (value: string | undefined) => (value === 'null' ? undefined : value);
  const fields: JobHeaderFields = {
    token: header[1],
    attempts: header[2],
    createdAt: header[3],
    maxAttempts: orNone(header[4]),
    backoff: orNone(header[5]),
    group: header[6],
    traceparent: header[7],
    progress: header[8],
    lastError: orNone(body.slice(errorStart, separator)),
  };
  return { fields, payloadAt: separator + V1_PAYLOAD.length };
}

/**
 * A tail (either format) as release 0.1 wrote it. Only for identities computed over a tail that must
 * not change with the storage format: a repeat schedule's fingerprint (an instance of this version
 * finds the definition an instance of 0.1 stored the same, and keeps its queued tick).
 */
export function formatOneTail(tail: string): string {
  if (tail.startsWith(',')) return tail;
  const split = splitBody(bodyOfTail(tail, 0));
  if (!split) return tail;
  const { maxAttempts, backoff, group, traceparent } = split.fields;
  const optional = `${group === undefined ? '' : `"q":"${group}",`}${traceparent === undefined ? '' : `"t":"${traceparent}",`}`;
  return `,"m":${maxAttempts ?? 'null'},"b":${backoff ?? 'null'},${optional}"e":null${V1_PAYLOAD}${split.payloadJson}}`;
}

/** The group recorded in a body tail (`encodeBodyTail`; either format), or undefined. */
export function groupOfTail(tail: string): string | undefined {
  return splitBody(bodyOfTail(tail, 0))?.fields.group;
}

/** The group and the stored dedupe (dedupe-spec.ts) of a body tail (`encodeBodyTail`; either format). */
export function routingOfTail(tail: string): { readonly group?: string; readonly dedupe?: string } {
  const fields = splitBody(bodyOfTail(tail, 0))?.fields;
  return { group: fields?.group, dedupe: fields?.dedupe };
}

/**
 * The claim token of a stored job, read without decoding the rest (a body the consumer cannot
 * decode still gets its failure recorded under its claim); '' when the body has none.
 */
export function readClaimToken(body: string): string {
  if (body.startsWith(JOB_FORMAT_VERSION)) {
    // The token is the first field: up to the next US (the attempts field always follows it).
    const end = body.indexOf(HEADER_END);
    const next = body.indexOf(FIELD_START, TOKEN_AT);
    const tokenFirst = body.charCodeAt(1) === FIELD_START_CODE && body.charAt(2) === JOB_FIELDS[0].code;
    return tokenFirst && next > 0 && (end < 0 || next < end) ? body.slice(TOKEN_AT, next) : '';
  }
  return /^\{"g":(\d+),/.exec(body)?.[1] ?? '';
}

export function decodeJob<T = unknown>(body: string): DecodedJob<T> {
  const split = splitBody(body);
  if (!split) throw new Error(`${UNREADABLE}${body.slice(0, 120)}`);
  const job = decodeFields(split.fields) as { -readonly [K in keyof DecodedJob<T>]: DecodedJob<T>[K] };
  job.payload = JSON.parse(split.payloadJson) as T;
  return job;
}

/** The header of a job (either format; see `readHeaderText`) decoded: everything but the payload. */
export function decodeHeader(header: string): Omit<DecodedJob, 'payload'> {
  const fields = readHeaderText(header);
  if (!fields) throw new Error(`${UNREADABLE}${header.slice(0, 120)}`);
  return decodeFields(fields);
}

function decodeFields(fields: JobHeaderFields): Omit<DecodedJob, 'payload'> {
  const { lastError, lastErrorStack } = fields.lastError === undefined ? NO_FAILURE : readFailure(JSON.parse(fields.lastError));
  const b = fields.backoff === undefined ? undefined : (JSON.parse(fields.backoff) as number[]);
  return {
    token: fields.token ?? '0',
    attempts: number(fields.attempts ?? '0', 'attempts'),
    createdAt: number(fields.createdAt, 'creation time'),
    maxAttempts: fields.maxAttempts === undefined ? undefined : number(fields.maxAttempts, 'maxAttempts'),
    backoff: b && { delay: b[0], factor: b[1], maxDelay: b[2], jitter: b[3] },
    lastError,
    lastErrorStack,
    group: fields.group,
    dedupe: fields.dedupe,
    priority: fields.priority === undefined ? undefined : number(fields.priority, 'priority'),
    traceparent: fields.traceparent,
    progress: fields.progress === undefined ? undefined : (JSON.parse(JSON.parse(fields.progress) as string) as unknown),
  };
}

const UINT = /^\d+$/;
const NO_FAILURE: { lastError?: string; lastErrorStack?: string } = {};

function number(value: string | undefined, what: string): number {
  if (value === undefined || !UINT.test(value)) throw new Error(`${UNREADABLE}its ${what} is ${JSON.stringify(value)}`);
  return Number(value);
}

/** The stored form of a failure (`e`): its message, and its stack when there was one. */
export function encodeFailure(message: string, stack: string | undefined): string {
  return JSON.stringify(stack === undefined ? message : [message, stack]);
}

/** A failure as stored (`encodeFailure`'s text, or 'null' for none) decoded: its message and stack. */
export function decodeFailure(storedJson: string): { lastError?: string; lastErrorStack?: string } {
  try {
    return readFailure(JSON.parse(storedJson));
  } catch {
    return NO_FAILURE;
  }
}

function readFailure(stored: unknown): { lastError?: string; lastErrorStack?: string } {
  if (typeof stored === 'string') return { lastError: stored };
  if (Array.isArray(stored) && typeof stored[0] === 'string') {
    return { lastError: stored[0], lastErrorStack: typeof stored[1] === 'string' ? stored[1] : undefined };
  }
  return {};
}

/** The group named in a stored body's header, without decoding the payload; undefined for none (or a body this version cannot read). */
export function readGroup(body: string): string | undefined {
  return splitBody(body)?.fields.group;
}

/**
 * Like `decodeJob`, but a body that cannot be read comes back with its raw text as the payload and
 * the reason as `lastError`, so listing a topic never fails because of one foreign entry.
 */
export function decodeJobLeniently<T = unknown>(body: string): DecodedJob<T> {
  try {
    return decodeJob<T>(body);
  } catch (error) {
    return { token: '0', attempts: 0, createdAt: 0, lastError: errorMessage(error), payload: body as T };
  }
}

/**
 * Encodes a payload as JSON, refusing every value JSON would silently change or drop, so that the
 * handler receives exactly what was scheduled. Class instances are accepted as their own enumerable
 * properties (the prototype is not stored). An object property that is `undefined` is left out, as
 * JSON does: the handler reads `undefined` for it either way, so optional fields of a DTO need no
 * cleaning (an `undefined` in an array would become `null`, and is refused).
 *
 * @throws InvalidJobError naming the offending path, e.g. `payload.order.createdAt`
 */
export function encodePayload(topic: string, payload: unknown, field = 'payload'): string {
  assertJsonData(topic, payload, field, new Set(), 0);
  try {
    return JSON.stringify(payload);
  } catch (error) {
    throw new InvalidJobError(topic, field, `cannot be encoded as JSON (${errorMessage(error)})`);
  }
}

/**
 * Encodes a progress value (`JobContext.progress`) as JSON, with the payload's checks and at most
 * MAX_PROGRESS_BYTES.
 *
 * @throws InvalidJobError naming the offending path, e.g. `progress.done`
 */
export function encodeProgress(topic: string, value: unknown): string {
  const json = encodePayload(topic, value, 'progress');
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_PROGRESS_BYTES) {
    throw new InvalidJobError(
      topic,
      'progress',
      `is ${bytes} bytes as JSON, over ${MAX_PROGRESS_BYTES}; record a figure or a few counters, and keep larger data elsewhere`,
    );
  }
  return json;
}

/**
 * Encodes a handler's return value for a kept completed job: undefined when it returned nothing.
 * A result is held in Redis and served whole like a payload, so it has the payload's bound.
 *
 * @param maxBytes the largest result, as UTF-8 bytes of its JSON (`delayQueue.maxPayloadBytes`)
 * @throws InvalidJobError naming the offending path, e.g. `result.createdAt`, or the result's size over `maxBytes`
 */
export function encodeResult(topic: string, value: unknown, maxBytes: number): string | undefined {
  if (value === undefined) return undefined;
  const json = encodePayload(topic, value, 'result');
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new InvalidJobError(
      topic,
      'result',
      `is ${bytes} bytes as JSON (UTF-8), over the limit of ${maxBytes} (delayQueue.maxPayloadBytes); ` +
        `return a reference to data kept elsewhere`,
    );
  }
  return json;
}

const MAX_DEPTH = 512;

function assertJsonData(topic: string, value: unknown, path: string, ancestors: Set<object>, depth: number): void {
  const fail = (problem: string): never => {
    throw new InvalidJobError(topic, path, problem);
  };
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) fail(`is ${value}, which JSON stores as null; use a finite number or null`);
      return;
    case 'bigint':
      return fail('is a BigInt, which JSON cannot encode; pass it as a string (value.toString())');
    case 'function':
      return fail('is a function, which JSON drops; pass data only');
    case 'symbol':
      return fail('is a symbol, which JSON drops; pass a string instead');
    case 'undefined':
      return fail('is undefined, which JSON cannot store here; use null');
  }
  if (value === null) return;
  const object = value as object;
  if (ancestors.has(object)) fail('refers back to an object that contains it (a circular structure); JSON cannot encode it');
  if (depth >= MAX_DEPTH) fail(`is nested more than ${MAX_DEPTH} levels deep; flatten the payload`);
  const builtIn = describeBuiltIn(object);
  if (builtIn) fail(builtIn);
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    fail('has a toJSON() method, so JSON would store something else than the value; pass the plain data it returns');
  }
  ancestors.add(object);
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) assertJsonData(topic, object[i], `${path}[${i}]`, ancestors, depth + 1);
  } else {
    for (const key of Object.keys(object)) {
      const child = (object as Record<string, unknown>)[key];
      if (child === undefined) continue;
      assertJsonData(topic, child, `${path}${propertyPath(key)}`, ancestors, depth + 1);
    }
  }
  ancestors.delete(object);
}

function describeBuiltIn(value: object): string | undefined {
  if (value instanceof Date) {
    return 'is a Date, which JSON turns into a string; pass date.toISOString() or date.getTime() and convert it back in the handler';
  }
  if (value instanceof Map) return 'is a Map, which JSON stores as {} (its entries are lost); pass Object.fromEntries(map)';
  if (value instanceof Set) return 'is a Set, which JSON stores as {} (its values are lost); pass [...set]';
  if (value instanceof WeakMap || value instanceof WeakSet) return 'is a WeakMap/WeakSet, which JSON cannot encode';
  if (value instanceof RegExp) return 'is a RegExp, which JSON stores as {}; pass regexp.source';
  if (value instanceof Error) return 'is an Error, which JSON stores as {}; pass { message: error.message }';
  if (value instanceof Promise) return 'is a Promise; await it and pass the result';
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return 'is binary data (Buffer, typed array or ArrayBuffer), which JSON does not keep as such; pass buffer.toString("base64")';
  }
  return undefined;
}

function propertyPath(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
