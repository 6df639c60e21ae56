import { InvalidJobError } from '../../../../lib/index.js';
import {
  bodyOfTail,
  decodeHeader,
  decodeJob,
  decodeJobLeniently,
  encodeBodyTail,
  encodeFailure,
  encodeJobBody,
  encodePayload,
  encodeProgress,
  MAX_PROGRESS_BYTES,
  readClaimToken,
  splitBody,
} from '../../../../lib/delay-queue/jobs/job-codec.js';

/** A stored body as the scripts leave it: the header fields Redis fills in, then the tail. */
function storedBody(tail: string, { token = 7, attempts = 2, createdAt = 1_700_000_000_000 } = {}): string {
  const { fields, payloadJson } = splitBody(bodyOfTail(tail, createdAt))!;
  return encodeJobBody({ ...fields, token: String(token), attempts: String(attempts) }, payloadJson);
}

const TRACEPARENT = `00-${'0af7651916cd43dd8448eb211c80319c'}-${'b7ad6b7169203331'}-01`;

describe('job codec: round trip through the stored form', () => {
  it('decodes what it encoded: header fields, retry options, trace context and payload', () => {
    const payload = { order: 'A-1', lines: [{ sku: 'x', qty: 2 }], note: 'he said "hi", \\o/', empty: [], nested: {} };
    const tail = encodeBodyTail(encodePayload('orders', payload), {
      maxAttempts: 4,
      backoff: { delay: 100, factor: 3, maxDelay: 5_000, jitter: 0.5 },
      traceparent: TRACEPARENT,
    });
    expect(decodeJob(storedBody(tail))).toEqual({
      token: '7',
      attempts: 2,
      createdAt: 1_700_000_000_000,
      maxAttempts: 4,
      backoff: { delay: 100, factor: 3, maxDelay: 5_000, jitter: 0.5 },
      lastError: undefined,
      traceparent: TRACEPARENT,
      payload,
    });
  });

  it('leaves out what was not given', () => {
    const decoded = decodeJob(storedBody(encodeBodyTail('null')));
    expect(decoded).toMatchObject({ maxAttempts: undefined, backoff: undefined, traceparent: undefined, payload: null });
  });

  it.each<[string, unknown]>([
    ['a large integer', 2 ** 53 - 1],
    ['a number with many digits', 0.1 + 0.2],
    ['an empty array', []],
    ['an empty object', {}],
    ['a string that looks like the payload separator', ',"p":{"x":1}'],
    ['unicode', 'ünï 😀 {tag}'],
  ])('keeps %s exactly', (_label, payload) => {
    expect(decodeJob(storedBody(encodeBodyTail(encodePayload('t', payload)))).payload).toEqual(payload);
  });

  it('reads the last error, even one that contains the payload separator', () => {
    const body = encodeJobBody({ createdAt: '1', lastError: JSON.stringify('boom ,"p": here \u001e\u001f') }, '{"a":1}');
    expect(decodeJob(body)).toMatchObject({ lastError: 'boom ,"p": here \u001e\u001f', payload: { a: 1 } });
  });

  it('reads a failure stored with its stack (message and stack may hold the payload separator)', () => {
    const stack = 'Error: boom ,"p": here\n    at handler (file.js:1:1)';
    const withStack = encodeJobBody({ createdAt: '1', lastError: encodeFailure('Error: boom ,"p": here', stack) }, '{"a":1}');
    expect(decodeJob(withStack)).toMatchObject({ lastError: 'Error: boom ,"p": here', lastErrorStack: stack, payload: { a: 1 } });
    const without = encodeJobBody({ createdAt: '1', lastError: encodeFailure('just text', undefined) }, '2');
    expect(decodeJob(without)).toMatchObject({ lastError: 'just text', lastErrorStack: undefined, payload: 2 });
  });

  it('reads a header of any length alone, as a job list sends it: the longest failure and progress, escaped', () => {
    // 10 000 control characters: 6 bytes each as JSON; progress of MAX_PROGRESS_BYTES, all quotes: escaped again.
    const [message, stack] = ['\u0000'.repeat(2_000), `Error: ${'\u0001'.repeat(8_000)}`];
    const progress = '"'.repeat((MAX_PROGRESS_BYTES - 2) / 2);
    const progressJson = encodeProgress('t', progress);
    expect(Buffer.byteLength(progressJson)).toBe(MAX_PROGRESS_BYTES);
    const fields = { createdAt: '5', attempts: '3', lastError: encodeFailure(message, stack), progress: JSON.stringify(progressJson) };
    const body = encodeJobBody(fields, '{"a":1}');
    const header = body.slice(0, body.indexOf('\x1e'));
    expect(header.length).toBeGreaterThan(60_000 + 2 * MAX_PROGRESS_BYTES);
    expect(decodeHeader(header)).toMatchObject({ attempts: 3, createdAt: 5, lastError: message, lastErrorStack: stack, progress });
  });

  it('reads the claim token without decoding the rest', () => {
    expect(readClaimToken(storedBody(encodeBodyTail('1'), { token: 123_456 }))).toBe('123456');
    expect(readClaimToken(storedBody(encodeBodyTail('1'), { token: 0 }))).toBe('0');
    expect(readClaimToken('{"g":42,garbage')).toBe('42');
    expect(readClaimToken('not a job')).toBe('');
    // Format 2: the first field, read up to the next one; a header not opening with it has none.
    expect(readClaimToken('2\x1fg77\x1fa1\x1fc5\x1e{}')).toBe('77');
    expect(readClaimToken('2\x1fa1\x1fg77\x1fc5\x1e{}')).toBe('');
    expect(readClaimToken('2\x1fg77\x1e{"\x1f":1}')).toBe('');
  });

  it('reads format-2 fields in one pass: unknown codes skipped, the required ones first and in order', () => {
    expect(decodeJob('2\x1fg7\x1fa1\x1fc5\x1fzfuture\x1fq\x1fm3\x1e[1]')).toMatchObject({
      token: '7',
      attempts: 1,
      createdAt: 5,
      group: '',
      maxAttempts: 3,
      payload: [1],
    });
    expect(() => decodeJob('2\x1fg7\x1fc5\x1fa1\x1e1')).toThrow(/Unreadable/);
    expect(() => decodeJob('2\x1fg7\x1fa1\x1e1')).toThrow(/Unreadable/);
    expect(() => decodeJob('2g7\x1e1')).toThrow(/Unreadable/);
  });
});

describe('job codec: bodies it cannot read', () => {
  it.each([
    ['a body written by hand', '{"payload":1}'],
    ['a header with its fields out of order', '{"a":1,"g":2,"c":3,"m":null,"b":null,"e":null,"p":1}'],
    ['plain text', 'hello'],
  ])('refuses %s', (_label, body) => {
    expect(() => decodeJob(body)).toThrow(/^Unreadable job body/);
  });

  it('decodes leniently: the raw text as payload and the reason as last error', () => {
    expect(decodeJobLeniently('hello')).toEqual({
      token: '0',
      attempts: 0,
      createdAt: 0,
      lastError: 'Unreadable job body (written by hand or by an incompatible version): hello',
      payload: 'hello',
    });
  });
});

describe('encodePayload: only what JSON keeps unchanged', () => {
  function refusedPath(payload: unknown): string {
    try {
      encodePayload('orders', payload);
    } catch (error) {
      if (error instanceof InvalidJobError) return error.field;
      throw error;
    }
    throw new Error('accepted');
  }

  it('encodes plain data and class instances as their own properties; refuses undefined properties (JSON would drop them)', () => {
    class Order {
      constructor(readonly id: string) {}
      total(): number {
        return 1;
      }
    }
    expect(encodePayload('t', { a: 1, b: 'x', c: true, d: null, e: [1, 'two'] })).toBe('{"a":1,"b":"x","c":true,"d":null,"e":[1,"two"]}');
    expect(encodePayload('t', { a: 1, f: undefined })).toBe('{"a":1}');
    expect(encodePayload('t', new Order('A-1'))).toBe('{"id":"A-1"}');
  });

  it.each<[string, unknown, string]>([
    ['NaN', { n: Number.NaN }, 'payload.n'],
    ['Infinity in an array', [1, Infinity], 'payload[1]'],
    ['a BigInt', { id: 1n }, 'payload.id'],
    ['a function', { f: () => 1 }, 'payload.f'],
    ['a symbol', { s: Symbol('x') }, 'payload.s'],
    ['undefined at the top', undefined, 'payload'],
    ['undefined inside an array', [undefined], 'payload[0]'],
    ['a Date', { at: new Date() }, 'payload.at'],
    ['a Map', { m: new Map() }, 'payload.m'],
    ['a Set', { s: new Set() }, 'payload.s'],
    ['a RegExp', { r: /x/ }, 'payload.r'],
    ['an Error', { e: new Error('x') }, 'payload.e'],
    ['a Promise', { p: Promise.resolve() }, 'payload.p'],
    ['a Buffer', { b: Buffer.from('x') }, 'payload.b'],
    ['an object with toJSON', { v: { toJSON: () => 1 } }, 'payload.v'],
    ['a property name that is not an identifier', { 'a-b': { c: Number.NaN } }, 'payload["a-b"].c'],
  ])('refuses %s, naming its path', (_label, payload, path) => {
    expect(refusedPath(payload)).toBe(path);
  });

  it('refuses a circular structure but accepts the same object twice side by side', () => {
    const shared = { x: 1 };
    expect(encodePayload('t', { a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(refusedPath({ loop })).toBe('payload.loop.self');
  });

  it('refuses nesting deeper than 512 levels', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 513; i++) deep = [deep];
    expect(refusedPath(deep)).toMatch(/^payload(\[0\]){512}$/);
    let ok: unknown = 1;
    for (let i = 0; i < 511; i++) ok = [ok];
    expect(() => encodePayload('t', ok)).not.toThrow();
  });
});
