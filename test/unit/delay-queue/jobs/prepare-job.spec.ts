import { InvalidJobError, type ScheduleOptions } from '../../../../lib/index.js';
import { MAX_DUE_MS, MAX_JOB_ID_BYTES } from '../../../../lib/delay-queue/jobs/delay-queue.constants.js';
import { prepareJob } from '../../../../lib/delay-queue/jobs/prepare-job.js';
import { resolveRedisLockConfig } from '../../../../lib/core/options/resolve-redis-lock-config.js';
import { refusedWith } from '../../../support/thrown.js';

const defaults = resolveRedisLockConfig({}).delayQueue;

describe('prepareJob: one job checked and encoded before anything is sent', () => {
  const refusal = (options: unknown, payload: unknown = { ok: true }, field = ''): InvalidJobError =>
    refusedWith(InvalidJobError, () => prepareJob('orders', payload, options as ScheduleOptions, defaults, field), options);

  it('gives a job without an id a fresh UUID, due after no delay', () => {
    const a = prepareJob('orders', { n: 1 }, undefined, defaults);
    const b = prepareJob('orders', { n: 1 }, {}, defaults);
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b.id).not.toBe(a.id);
    expect(a).toMatchObject({ kind: 'delay', when: 0, replace: false });
  });

  it('keeps a given id, a delay (rounded up) or an absolute time', () => {
    expect(prepareJob('orders', 1, { id: 'order-1', delay: 1_500.2 }, defaults)).toMatchObject({
      id: 'order-1',
      kind: 'delay',
      when: 1_501,
    });
    const at = new Date('2030-01-02T03:04:05.006Z');
    expect(prepareJob('orders', 1, { at }, defaults)).toMatchObject({ kind: 'at', when: at.getTime() });
    expect(prepareJob('orders', 1, { at: 1_700_000_000_000.5 }, defaults)).toMatchObject({ kind: 'at', when: 1_700_000_000_001 });
    expect(prepareJob('orders', 1, { at: 0 }, defaults)).toMatchObject({ kind: 'at', when: 0 });
  });

  it('accepts an id of exactly the byte limit, counted in UTF-8', () => {
    expect(prepareJob('orders', 1, { id: 'x'.repeat(MAX_JOB_ID_BYTES) }, defaults).id).toHaveLength(MAX_JOB_ID_BYTES);
    expect(refusal({ id: 'é'.repeat(MAX_JOB_ID_BYTES / 2 + 1) }).field).toBe('id');
  });

  it('marks a replacing schedule', () => {
    expect(prepareJob('orders', 1, { id: 'a', replace: true }, defaults).replace).toBe(true);
    expect(prepareJob('orders', 1, { id: 'a', replace: false }, defaults).replace).toBe(false);
  });

  it('counts the payload in UTF-8 bytes of its JSON', () => {
    expect(prepareJob('orders', { name: 'é' }, undefined, defaults).payloadBytes).toBe(Buffer.byteLength('{"name":"é"}'));
  });

  it("stores its own maxAttempts and backoff (merged over the module's) in the body, and nothing when not given", () => {
    const own = prepareJob('orders', { n: 1 }, { maxAttempts: 3, backoff: { delay: 10 } }, defaults);
    expect(own.tail).toBe('\x1fm3\x1fb[10,2,3600000,0.2]\x1e{"n":1}');
    expect(prepareJob('orders', { n: 1 }, undefined, defaults).tail).toBe('\x1e{"n":1}');
  });

  it('stores a valid traceparent, and drops one that is not', () => {
    const traceparent = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    expect(prepareJob('orders', 1, undefined, defaults, '', traceparent).tail).toContain(`\x1ft${traceparent}\x1e`);
    expect(prepareJob('orders', 1, undefined, defaults, '', 'not-a-traceparent').tail).not.toContain('\x1ft');
  });

  it.each<[string, unknown, string]>([
    ['options that are not an object', 'soon', 'options'],
    ['an empty id', { id: '' }, 'id'],
    ['a numeric id', { id: 42 }, 'id'],
    ['an id with a lone surrogate', { id: 'a\uD800' }, 'id'],
    ['both delay and at', { delay: 1, at: 2 }, 'delay'],
    ['a negative delay', { delay: -1 }, 'delay'],
    ['an infinite delay', { delay: Infinity }, 'delay'],
    ['a delay past the year 2100', { delay: MAX_DUE_MS }, 'delay'],
    ['an invalid Date', { at: new Date('nope') }, 'at'],
    ['a negative at', { at: -1 }, 'at'],
    ['an at past the year 2100', { at: MAX_DUE_MS + 1 }, 'at'],
    ['maxAttempts of 0', { maxAttempts: 0 }, 'maxAttempts'],
    ['fractional maxAttempts', { maxAttempts: 2.5 }, 'maxAttempts'],
    ['maxAttempts over a million', { maxAttempts: 1_000_001 }, 'maxAttempts'],
    ['a backoff factor below 1', { backoff: { factor: 0 } }, 'backoff.factor'],
    ['a replace flag that is not a boolean', { replace: 'yes' }, 'replace'],
    ['a null delay', { delay: null }, 'delay'],
    ['a Date before 1970', { at: new Date(-1) }, 'at'],
    ['null maxAttempts', { maxAttempts: null }, 'maxAttempts'],
    ['a backoff that is not an object', { backoff: 'fast' }, 'backoff'],
    ['a null backoff', { backoff: null }, 'backoff'],
    ['a backoff delay past the timer limit', { backoff: { delay: 2 ** 31 } }, 'backoff.delay'],
  ])('refuses %s, naming the field', (_label, options, field) => {
    expect(refusal(options).field).toBe(field);
  });

  it('refuses a payload JSON would change, naming its path', () => {
    expect(refusal(undefined, { order: { at: new Date() } }).field).toBe('payload.order.at');
  });

  it('prefixes the field of a job inside a batch', () => {
    expect(refusal({ delay: -1 }, 1, 'jobs[2]').field).toBe('jobs[2].delay');
    expect(refusal(undefined, { n: 1n }, 'jobs[0]').field).toBe('jobs[0].payload.n');
    expect(refusal('soon', 1, 'jobs[1]').field).toBe('jobs[1]');
  });

  it('names the field of a retry option inside a batch', () => {
    expect(refusal({ backoff: { jitter: 2 } }, 1, 'jobs[4]').field).toBe('jobs[4].backoff.jitter');
    expect(refusal({ backoff: 5 }, 1, 'jobs[4]').field).toBe('jobs[4].backoff');
  });

  it('says what a refused retry option was and what to use', () => {
    expect(refusal({ maxAttempts: '3' }).message).toBe(
      'Invalid job for topic "orders": `maxAttempts` is the string "3"; use a whole number from 1 to 1000000. Nothing was scheduled.',
    );
    expect(refusal({ backoff: 'fast' }).message).toBe(
      'Invalid job for topic "orders": `backoff` must be an object. Nothing was scheduled.',
    );
  });

  it('says what was wrong and that nothing was scheduled', () => {
    expect(refusal({ delay: -5 }).message).toBe(
      'Invalid job for topic "orders": `delay` is -5; use a finite number of milliseconds >= 0. Nothing was scheduled.',
    );
  });
});
