import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';
import { errorMessage } from '../../core/errors/error-message.js';

/**
 * The stored form of a job (one field of the topic's `jobs` hash):
 *
 *   {"g":<claim token>,"a":<attempts>,"c":<created ms>,"m":<maxAttempts|null>,"b":<[delay,factor,maxDelay,jitter]|null>,["q":"<group>",]["t":"<traceparent>",]["o":"<progress JSON>",]"e":<last error|null>,"p":<payload>}
 *
 * `q`, present only for a job of a group, is the group's name as given (no `"`, `\` or control
 * characters: see prepare-job.ts), so the scripts read it without unescaping.
 *
 * `e` is null, the last failure's message as a JSON string, or `[message, stack]` (JSON strings
 * only, so no bare `,"p":` can occur in it either).
 *
 * `o`, present once a handler called `JobContext.progress()`, is the progress's JSON text as a JSON
 * string (set-progress.lua.ts): a string holds no bare quote, so no `,"e":` or `,"p":` can occur in it.
 *
 * `t`, present only when the job was scheduled inside a trace, is the W3C `traceparent` of the
 * scheduling span (hex digits and dashes only, so the scripts' search for `,"e":` cannot trip on it).
 * The field order is fixed and everything before `"p"` is written by this library, so the scripts
 * can read and rewrite the header with plain string operations and never decode or re-encode the
 * payload (Lua's cjson would round numbers to 14 digits and turn `[]` into `{}`).
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
  /** The last progress a handler recorded (`JobContext.progress`), when there was one. */
  readonly progress?: unknown;
  readonly payload: T;
}

const HEADER = /^\{"g":(\d+),"a":(\d+),"c":(\d+),"m":(\d+|null),"b":(\[[^\]]*\]|null),(?:"q":"([^"\\]*)",)?(?:"t":"([0-9a-f-]{55})",)?(?:"o":("(?:[^"\\]|\\.)*"),)?"e":/;

/** Largest progress, as UTF-8 bytes of its JSON: progress is a figure or a few counters, read on every job list. */
export const MAX_PROGRESS_BYTES = 8_192;
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const PAYLOAD_SEPARATOR = ',"p":';
const CLAIM_TOKEN = /^\{"g":(\d+),/;

/** The part of a body after the header fields Redis fills in (`g`, `a`, `c`), as sent by `schedule`. */
export function encodeBodyTail(
  payloadJson: string,
  maxAttempts: number | undefined,
  backoff: Required<BackoffOptions> | undefined,
  traceparent?: string,
  group?: string,
): string {
  const b = backoff ? JSON.stringify([backoff.delay, backoff.factor, backoff.maxDelay, backoff.jitter]) : 'null';
  const q = group === undefined ? '' : `"q":"${group}",`;
  const t = traceparent !== undefined && TRACEPARENT.test(traceparent) ? `"t":"${traceparent}",` : '';
  return `,"m":${maxAttempts ?? 'null'},"b":${b},${q}${t}"e":null${PAYLOAD_SEPARATOR}${payloadJson}}`;
}

const TAIL_GROUP = /^,"m":(?:\d+|null),"b":(?:\[[^\]]*\]|null),"q":"([^"\\]*)",/;

/** The group recorded in a body tail (`encodeBodyTail`), or undefined. */
export function groupOfTail(tail: string): string | undefined {
  return TAIL_GROUP.exec(tail)?.[1];
}

/**
 * The claim token of a stored job, read without decoding the rest (a body the consumer cannot
 * decode still gets its failure recorded under its claim); '' when the body has none.
 */
export function readClaimToken(body: string): string {
  return CLAIM_TOKEN.exec(body)?.[1] ?? '';
}

export function decodeJob<T = unknown>(body: string): DecodedJob<T> {
  const header = HEADER.exec(body);
  if (!header) throw new Error(`Unreadable job body (written by hand or by an incompatible version): ${body.slice(0, 120)}`);
  const errorStart = header[0].length;
  // `e` is null, a JSON string or an array of two, which hold no unescaped quote: the first separator after it is ours.
  const separator = body.indexOf(PAYLOAD_SEPARATOR, errorStart);
  const { lastError, lastErrorStack } = readFailure(JSON.parse(body.slice(errorStart, separator)));
  const b = header[5] === 'null' ? undefined : (JSON.parse(header[5]) as number[]);
  return {
    token: header[1],
    attempts: Number(header[2]),
    createdAt: Number(header[3]),
    maxAttempts: header[4] === 'null' ? undefined : Number(header[4]),
    backoff: b && { delay: b[0], factor: b[1], maxDelay: b[2], jitter: b[3] },
    lastError,
    lastErrorStack,
    group: header[6],
    traceparent: header[7],
    progress: header[8] === undefined ? undefined : (JSON.parse(JSON.parse(header[8]) as string) as unknown),
    payload: JSON.parse(body.slice(separator + PAYLOAD_SEPARATOR.length, -1)) as T,
  };
}

/** The stored form of a failure (`e`): its message, and its stack when there was one. */
export function encodeFailure(message: string, stack: string | undefined): string {
  return JSON.stringify(stack === undefined ? message : [message, stack]);
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
  return HEADER.exec(body)?.[6];
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
    throw new InvalidJobError(topic, 'progress', `is ${bytes} bytes as JSON, over ${MAX_PROGRESS_BYTES}; record a figure or a few counters, and keep larger data elsewhere`);
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
      `is ${bytes} bytes as JSON (UTF-8), over the limit of ${maxBytes} (delayQueue.maxPayloadBytes); return a reference to data kept elsewhere`,
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
