import { InvalidLockKeyTemplateError } from '../../../lib/core/errors/invalid-lock-key-template.error.js';
import { compileKeySource } from '../../../lib/decorators/key-template.js';

/** Renders `template` over method arguments, as @WithLock does. */
function argumentKey(template: string | string[]): (...args: unknown[]) => string | string[] {
  const keyOf = compileKeySource<unknown[]>(template, {
    root: 'argument',
    location: '@WithLock on Spec.method()',
    rootOf: (args, placeholder) => ({ value: args[placeholder.index!], name: `argument ${placeholder.index}` }),
    callFn: (fn, args) => fn(...args),
  });
  return (...args) => keyOf(args);
}

/** Renders `template` over one request-like object, as @WithRequestLock does. */
function requestKey(template: string): (request: Record<string, unknown>) => string | string[] {
  const keyOf = compileKeySource<Record<string, unknown>>(template, {
    root: 'property',
    location: '@WithRequestLock on Spec.route()',
    rootOf: (request) => ({ value: request, name: 'request' }),
    callFn: (fn, request) => fn(request),
  });
  return (request) => keyOf(request);
}

describe('key templates: rendering', () => {
  it('keeps plain values as they are', () => {
    const key = argumentKey('order:<0>:<1>');
    expect(key(42, 'abc-1')).toBe('order:42:abc-1');
    expect(key('A_b.c~d', 7n)).toBe('order:A_b.c~d:7');
    expect(argumentKey('flag:<0>')(true)).toBe('flag:true');
  });

  it('gives different keys to argument tuples that only differ in where a ":" sits', () => {
    const key = argumentKey('order:<0>:<1>');
    expect(key('1:2', '3')).not.toBe(key('1', '2:3'));
    expect(key('1:2', '3')).not.toBe('order:1:2:3');
  });

  it('never lets a value reach into the literal text after its placeholder', () => {
    // '42:refund' must not land on the lock of order 42's refund.
    expect(argumentKey('order:<0>')('42:refund')).not.toBe(argumentKey('order:<0>:refund')(42));
  });

  it('escapes the escape character, so an already escaped-looking value stays distinct', () => {
    const key = argumentKey('order:<0>:<1>');
    const looksEscaped = key('1%3A2', '3');
    expect(looksEscaped).not.toBe(key('1:2', '3'));
    expect(new Set([key('%', 'x'), key('%25', 'x'), key('%2525', 'x')]).size).toBe(3);
  });

  it('escapes whatever literal character follows a placeholder, not only ":"', () => {
    const dash = argumentKey('order-<0>-<1>');
    expect(dash('1-2', '3')).not.toBe(dash('1', '2-3'));
    const slash = argumentKey('<0>/<1>');
    expect(slash('a/b', 'c')).not.toBe(slash('a', 'b/c'));
    // ...and keeps a value readable where that character is not a separator.
    expect(argumentKey('order:<0>')('abc-1')).toBe('order:abc-1');
  });

  it('applies to request templates too (@WithRequestLock)', () => {
    const key = requestKey('order:<params.id>:<query.kind>');
    expect(key({ params: { id: '42:refund' }, query: { kind: 'x' } })).not.toBe(key({ params: { id: '42' }, query: { kind: 'refund:x' } }));
    expect(key({ params: { id: '42' }, query: { kind: 'refund' } })).toBe('order:42:refund');
  });

  it('applies to each template of a multi-key lock', () => {
    const keys = argumentKey(['acct:<0>:<1>', 'acct:fees']);
    expect(keys('a:b', 'c')).not.toEqual(keys('a', 'b:c'));
  });

  it('refuses two placeholders with nothing between them: no escaping could tell (ab, c) from (a, bc)', () => {
    expect(() => argumentKey('order:<0><1>')).toThrow(InvalidLockKeyTemplateError);
    expect(() => argumentKey('order:<0><1>')).toThrow(/<0><1>.*separator/);
  });

  it('refuses a placeholder followed by "%": escaped values start with it, so (":", "3A:") and ("::", "3A") would meet', () => {
    for (const template of ['<0>%<1>', 'order:<0>%3A<1>', 'order:<0>%']) {
      expect(() => argumentKey(template)).toThrow(InvalidLockKeyTemplateError);
    }
    expect(argumentKey('%<0>:%<1>')('a:b', '%')).toBe('%a%3Ab:%%25');
  });

  it('maps distinct argument tuples to distinct keys (exhaustive over a small alphabet)', () => {
    const alphabet = [':', '%', '-', '/', 'a', '1', '{', '}', '3A'];
    const values: string[] = [...alphabet];
    for (const x of alphabet) for (const y of alphabet) values.push(x + y);
    for (const template of [
      'order:<0>:<1>',
      'order-<0>-<1>',
      '<0>/<1>:x',
      'k:<0>:refund:<1>',
      '<0>3<1>',
      '<0>A<1>',
      '<0>:%<1>',
      '%<0>:<1>:%',
    ]) {
      const key = argumentKey(template);
      const seen = new Map<string, string>();
      for (const a of values) {
        for (const b of values) {
          const rendered = key(a, b) as string;
          const tuple = JSON.stringify([a, b]);
          const earlier = seen.get(rendered);
          if (earlier !== undefined) throw new Error(`${template}: ${earlier} and ${tuple} both render ${rendered}`);
          seen.set(rendered, tuple);
        }
      }
      expect(seen.size).toBe(values.length ** 2);
    }
  });
});
