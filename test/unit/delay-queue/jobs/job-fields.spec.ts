import {
  bodyOfTail,
  decodeHeader,
  decodeJob,
  encodeBodyTail,
  encodeJobBody,
  formatOneTail,
  groupOfTail,
  readClaimToken,
  readGroup,
  splitBody,
} from '../../../../lib/delay-queue/jobs/job-codec.js';
import { FIELD_START, HEADER_END, JOB_FIELDS, JOB_FORMAT_VERSION } from '../../../../lib/delay-queue/jobs/job-fields.js';
import { LUA_JOB_HEADER } from '../../../../lib/delay-queue/scripts/job-header-lua-snippet.js';

/*
 * The stored job has one definition (jobs/job-fields.ts): the codec and the Lua header snippet are
 * both made from it, and release 0.1's format 1 is still read.
 */
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('the job field table', () => {
  it('gives every field its own one-character code, none a separator or a control character', () => {
    const codes = JOB_FIELDS.map((field) => field.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^[a-z]$/);
    expect(new Set(JOB_FIELDS.map((field) => field.name)).size).toBe(JOB_FIELDS.length);
    expect(JOB_FORMAT_VERSION).not.toBe('{'); // format 1 opens with '{'
  });

  it('lists the required fields first, token and attempts leading (the claim rewrites them with one anchored match)', () => {
    const required = JOB_FIELDS.filter((field) => 'required' in field);
    expect(JOB_FIELDS.slice(0, required.length)).toEqual(required);
    expect(required.map((field) => field.name)).toEqual(['token', 'attempts', 'createdAt']);
  });

  it('is what the Lua snippet reads and writes: each code mapped to its name, each field written under its code in table order', () => {
    const lua = LUA_JOB_HEADER.source;
    for (const field of JOB_FIELDS) expect(lua).toContain(`${field.code} = '${field.name}'`);
    const writes = JOB_FIELDS.map((field) => {
      const required = `parts[#parts + 1] = US .. '${field.code}' .. fieldText(job.${field.name})`;
      const optional = `v = job.${field.name}\n  if v then parts[#parts + 1] = US .. '${field.code}' .. fieldText(v) end`;
      return 'required' in field ? lua.indexOf(required) : lua.indexOf(optional);
    });
    expect(writes.every((at) => at > 0)).toBe(true);
    expect([...writes].sort((a, b) => a - b)).toEqual(writes);
    expect(lua).toContain(String.raw`JOB_CLAIM_PATTERN = '^2\31g(%d+)\31a(%d+)\31c(%d+)()', '^2\31g(%d+)\31a(%d+)()'`.split(' = ')[1]);
  });
});

describe('format 2', () => {
  it('stores a fresh job as its creation time and payload alone', () => {
    const tail = encodeBodyTail('{"orderId":1}');
    expect(bodyOfTail(tail, 1_700_000_000_000)).toBe('2\x1fg0\x1fa0\x1fc1700000000000\x1e{"orderId":1}');
  });

  it('round-trips every field, in table order, optional ones left out when absent', () => {
    const fields = {
      token: '17',
      attempts: '2',
      createdAt: '5',
      maxAttempts: '3',
      backoff: '[1,2,3,0.5]',
      group: 'order:42',
      dedupe: 't5000:product:7',
      traceparent: TRACEPARENT,
      priority: '7',
      progress: JSON.stringify('{"a":1}'),
      lastError: JSON.stringify(['Error: x', 'Error: x\n  at y']),
    };
    const body = encodeJobBody(fields, '{"p":1}');
    expect(body).toBe(`2${JOB_FIELDS.map((f) => FIELD_START + f.code + fields[f.name]).join('')}${HEADER_END}{"p":1}`);
    expect(splitBody(body)).toEqual({ fields, payloadJson: '{"p":1}' });
    expect(encodeJobBody({ createdAt: '5' }, '1')).toBe('2\x1fg0\x1fa0\x1fc5\x1e1');
    expect(() => encodeJobBody({}, '1')).toThrow(/always has its createdAt/);
    expect(decodeJob(body)).toMatchObject({ token: '17', attempts: 2, group: 'order:42', priority: 7, progress: { a: 1 } });
    expect(decodeJob(body).lastErrorStack).toBe('Error: x\n  at y');
  });

  it('refuses a value with a control character (it would end the field)', () => {
    expect(() => encodeJobBody({ createdAt: '1', group: 'a\x1eb' }, '1')).toThrow(/control character/);
  });

  it('reads a header alone (as the job list sends it) and a group from a tail', () => {
    const body = bodyOfTail(encodeBodyTail('[1]', { maxAttempts: 4, group: 'g:1' }), 9);
    const header = body.slice(0, body.indexOf(HEADER_END));
    expect(decodeHeader(header)).toMatchObject({ createdAt: 9, maxAttempts: 4, group: 'g:1', attempts: 0 });
    expect(groupOfTail(encodeBodyTail('[1]', { maxAttempts: 4, group: 'g:1' }))).toBe('g:1');
    expect(groupOfTail(encodeBodyTail('[1]', { maxAttempts: 4 }))).toBeUndefined();
  });

  it('skips a field of a later format, and refuses a header without its required fields in order', () => {
    const later = '2\x1fg0\x1fa3\x1fc5\x1fz{"later":1}\x1fm2\x1e"p"';
    expect(decodeJob(later)).toMatchObject({ createdAt: 5, attempts: 3, maxAttempts: 2, payload: 'p' });
    expect(() => decodeJob('2\x1fc5\x1fg0\x1fa3\x1e"p"')).toThrow(/^Unreadable job body/);
  });
});

describe('format 1 (release 0.1), still read', () => {
  const v1 =
    `{"g":12,"a":1,"c":1700000000001,"m":3,"b":[10,2,3600000,0],"q":"order:42","t":"${TRACEPARENT}",` +
    `"o":"{\\"done\\":1}","e":"Error: boom ,\\"p\\": x","p":[1,{"p":2}]}`;

  it('decodes what release 0.1 stored, as the same job in format 2', () => {
    const decoded = decodeJob(v1);
    expect(decoded).toEqual({
      token: '12',
      attempts: 1,
      createdAt: 1_700_000_000_001,
      maxAttempts: 3,
      backoff: { delay: 10, factor: 2, maxDelay: 3_600_000, jitter: 0 },
      group: 'order:42',
      traceparent: TRACEPARENT,
      progress: { done: 1 },
      lastError: 'Error: boom ,"p": x',
      lastErrorStack: undefined,
      payload: [1, { p: 2 }],
    });
    const { fields, payloadJson } = splitBody(v1)!;
    expect(decodeJob(encodeJobBody(fields, payloadJson))).toEqual(decoded);
    expect(readClaimToken(v1)).toBe('12');
    expect(readGroup(v1)).toBe('order:42');
    expect(decodeHeader(v1.slice(0, v1.indexOf(',"p":')))).toMatchObject({ attempts: 1, group: 'order:42' });
  });

  it('turns an old tail (an outbox row or repeat schedule written by release 0.1) into a body', () => {
    const tail = ',"m":null,"b":null,"e":null,"p":{"n":1}}';
    expect(bodyOfTail(tail, 7)).toBe('{"g":0,"a":0,"c":7,"m":null,"b":null,"e":null,"p":{"n":1}}');
    expect(decodeJob(bodyOfTail(tail, 7))).toMatchObject({ createdAt: 7, payload: { n: 1 } });
    expect(groupOfTail(',"m":null,"b":null,"q":"g","e":null,"p":1}')).toBe('g');
  });

  it("gives a tail back as release 0.1's encodeBodyTail wrote it (a repeat schedule's fingerprint is computed over that)", () => {
    const backoff = { delay: 10, factor: 2, maxDelay: 3_600_000, jitter: 0.2 };
    expect(formatOneTail(encodeBodyTail('{"n":1}', { maxAttempts: 3, backoff, traceparent: TRACEPARENT, group: 'g' }))).toBe(
      `,"m":3,"b":[10,2,3600000,0.2],"q":"g","t":"${TRACEPARENT}","e":null,"p":{"n":1}}`,
    );
    expect(formatOneTail(encodeBodyTail('null'))).toBe(',"m":null,"b":null,"e":null,"p":null}');
    expect(formatOneTail(',"m":null,"b":null,"e":null,"p":1}')).toBe(',"m":null,"b":null,"e":null,"p":1}');
  });
});
