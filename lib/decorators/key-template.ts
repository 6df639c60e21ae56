import { InvalidLockKeyTemplateError } from '../core/errors/invalid-lock-key-template.error.js';
import { UnresolvedLockKeyError } from '../core/errors/unresolved-lock-key.error.js';
import { escapeTemplateValue } from '../core/keys/escape-template-value.js';

/**
 * Where a lock key comes from: a template (`'order:<0>'`, `'<1.id>'`), an array of templates (a
 * multi-key lock), or a function of the same inputs returning a key or an array of keys.
 *
 * @inline
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any method's arguments (a method's parameters are contravariant)
export type LockKeySource<TArgs extends unknown[] = any[]> = string | readonly string[] | ((...args: TArgs) => string | readonly string[]);

/**
 * How the first segment of a placeholder is read: `argument` means an argument index (`<0>`,
 * `<1.id>`, used by `@WithLock`), `property` a property of one root object (`<params.id>`, used by
 * `@WithRequestLock`).
 */
type PlaceholderRoot = 'argument' | 'property';

/** One `<...>` of a template. */
interface KeyPlaceholder {
  /** As written, with the angle brackets: `<1.id>`. */
  readonly text: string;
  /** Argument index for `argument` roots. */
  readonly index?: number;
  /** Property names walked from the root (for `property` roots the first one is the root property). */
  readonly path: readonly string[];
  /** The literal character right after the placeholder (none at the end): a value escapes it. */
  readonly delimiter?: string;
}

/** What is known about the decorated method's parameters, for checks at decoration time. */
export interface ParameterShape {
  /** `design:paramtypes` (a rest parameter shows its element type), if emitted. */
  readonly types?: readonly unknown[];
  /** True when `types` lists every parameter a call can pass (no rest parameter can follow). */
  readonly exact?: boolean;
}

const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor']);
const SEGMENT = /^[A-Za-z0-9_$-]+$/;
const PRIMITIVE_TYPES = new Map<unknown, string>([
  [String, 'string'],
  [Number, 'number'],
  [Boolean, 'boolean'],
  [Symbol, 'symbol'],
  [BigInt, 'bigint'],
]);

/**
 * A parsed key template. Literal text is kept as written; each placeholder is replaced by the
 * value it points at (a non-empty string, a finite number, a bigint or a boolean), with `%`, `:`
 * and the literal character that follows the placeholder percent-encoded (escapeTemplateValue), so
 * distinct values always give distinct keys. Escaping the key for Redis is the key space's job.
 * Two placeholders with nothing between them (`<0><1>`) are refused: no escaping could tell
 * `('ab', 'c')` from `('a', 'bc')`; so is a placeholder followed by `%` (escapes start with it).
 *
 * Syntax: `<0>` argument 0, `<1.id>` property `id` of argument 1, `<1.items.0.sku>` deeper;
 * `\<` and `\>` are literal angle brackets.
 */
class KeyTemplate {
  private constructor(
    readonly source: string,
    private readonly parts: ReadonlyArray<string | KeyPlaceholder>,
  ) {}

  get placeholders(): KeyPlaceholder[] {
    return this.parts.filter((p): p is KeyPlaceholder => typeof p !== 'string');
  }

  /** @throws InvalidLockKeyTemplateError naming `location` */
  static parse(source: unknown, root: PlaceholderRoot, location: string): KeyTemplate {
    const fail = (problem: string): never => {
      throw new InvalidLockKeyTemplateError(typeof source === 'string' ? source : String(source), location, problem);
    };
    if (typeof source !== 'string') return fail(`a template must be a string, got ${describe(source)}`);
    if (source.length === 0) return fail('a template must not be empty');

    const parts: Array<string | KeyPlaceholder> = [];
    let literal = '';
    for (let i = 0; i < source.length; i++) {
      const ch = source[i];
      if (ch === '\\' && (source[i + 1] === '<' || source[i + 1] === '>' || source[i + 1] === '\\')) {
        literal += source[++i];
        continue;
      }
      if (ch !== '<') {
        literal += ch;
        continue;
      }
      const end = source.indexOf('>', i + 1);
      if (end === -1) return fail(`the placeholder opened at position ${i} is not closed; write \\< for a literal "<"`);
      const body = source.slice(i + 1, end);
      const text = source.slice(i, end + 1);
      if (body.includes('<')) return fail(`placeholder ${text} contains "<"; placeholders cannot be nested`);
      const segments = body.split('.');
      if (body.length === 0 || segments.some((s) => s.length === 0)) {
        return fail(`placeholder ${text} is empty or has an empty path segment; use e.g. ${example(root)}`);
      }
      const bad = segments.find((s) => !SEGMENT.test(s));
      if (bad !== undefined) {
        return fail(`placeholder ${text} has the segment ${JSON.stringify(bad)}; use letters, digits, "_", "$" or "-"`);
      }
      const forbidden = segments.find((s) => FORBIDDEN_SEGMENTS.has(s));
      if (forbidden !== undefined) return fail(`placeholder ${text} may not read "${forbidden}"`);
      if (root === 'argument') {
        if (!/^\d+$/.test(segments[0])) {
          return fail(`placeholder ${text} must start with an argument index (<0> is the first argument, <1.id> the id of the second)`);
        }
        parts.push(literal, { text, index: Number(segments[0]), path: segments.slice(1) });
      } else {
        parts.push(literal, { text, path: segments });
      }
      literal = '';
      i = end;
    }
    parts.push(literal);
    const kept = parts.filter((p) => p !== '');
    for (let i = 0; i < kept.length; i++) {
      const part = kept[i];
      if (typeof part === 'string') continue;
      const next = kept[i + 1];
      if (next !== undefined && typeof next !== 'string') {
        return fail(
          `placeholders ${part.text}${next.text} have nothing between them, so different values could give the same key; ` +
            `put a separator between them, e.g. ${part.text}:${next.text}`,
        );
      }
      if (next === undefined) continue;
      if (next.startsWith('%')) {
        // '%' starts the escapes inside values, so a literal '%' right after one could be either.
        return fail(
          `placeholder ${part.text} is followed by "%", which escaped values start with; put another character first, e.g. ${part.text}:%`,
        );
      }
      kept[i] = { ...part, delimiter: String.fromCodePoint(next.codePointAt(0)!) };
    }
    return new KeyTemplate(source, kept);
  }

  /**
   * Checks the placeholders against the method's declared parameters. Only what is certain fails:
   * an index past the last parameter (when no rest parameter can follow) and a property path into
   * a parameter declared as a primitive. What cannot be known here fails at call time instead
   * (`UnresolvedLockKeyError`, the method does not run).
   */
  checkAgainst(shape: ParameterShape, location: string): void {
    const types = shape.types;
    if (!types) return;
    for (const placeholder of this.placeholders) {
      const index = placeholder.index!;
      if (index >= types.length) {
        if (!shape.exact) continue; // may be read from a rest parameter
        const count = types.length;
        const valid = count === 0 ? 'it takes no arguments' : `valid indexes are 0 to ${count - 1}`;
        throw new InvalidLockKeyTemplateError(
          this.source,
          location,
          `placeholder ${placeholder.text} reads argument ${index}, but the method declares ${count} ` +
            `parameter${count === 1 ? '' : 's'} (${valid})`,
        );
      }
      const primitive = placeholder.path.length > 0 ? PRIMITIVE_TYPES.get(types[index]) : undefined;
      if (primitive) {
        throw new InvalidLockKeyTemplateError(
          this.source,
          location,
          `placeholder ${placeholder.text} reads a property of argument ${index}, which is declared as a ${primitive}; ` +
            `use <${index}> for the value itself`,
        );
      }
    }
  }

  /**
   * Fills the placeholders. `root` gives the value a placeholder's path is walked from (argument
   * `index` for `argument` roots, the root object for `property` roots) and a name for messages.
   *
   * @throws UnresolvedLockKeyError when a value is missing or not usable in a key
   */
  render(root: (placeholder: KeyPlaceholder) => { value: unknown; name: string }, location: string): string {
    let key = '';
    for (const part of this.parts) {
      if (typeof part === 'string') {
        key += part;
        continue;
      }
      const start = root(part);
      let value = start.value;
      let reached = start.name;
      let complete = true;
      for (const segment of part.path) {
        if (value === undefined || value === null) {
          complete = false;
          break;
        }
        value = (value as Record<string, unknown>)[segment];
        reached += `.${segment}`;
      }
      const problem = unusable(value);
      if (problem) {
        const where = `placeholder ${part.text} in ${JSON.stringify(this.source)}`;
        throw new UnresolvedLockKeyError(
          this.source,
          location,
          complete ? `${where} ${problem}` : `${where} cannot be read: ${reached} ${problem}`,
        );
      }
      key += escapeTemplateValue(String(value), part.delimiter);
    }
    return key;
  }
}

/**
 * Compiles a key source once (at decoration time) into a function producing the key of one call.
 *
 * @param rootOf resolves a placeholder's starting value for one call's inputs
 * @param callFn calls a key function with one call's inputs
 */
export function compileKeySource<TInput>(
  source: unknown,
  options: {
    root: PlaceholderRoot;
    location: string;
    shape?: ParameterShape;
    rootOf: (input: TInput, placeholder: KeyPlaceholder) => { value: unknown; name: string };
    callFn: (fn: (...args: unknown[]) => unknown, input: TInput) => unknown;
  },
): (input: TInput) => string | string[] {
  const { root, location, shape } = options;
  if (typeof source === 'function') {
    const fn = source as (...args: unknown[]) => unknown;
    return (input) => checkComputedKey(options.callFn(fn, input), location);
  }
  const single = typeof source === 'string';
  if (!single && !Array.isArray(source)) {
    throw new InvalidLockKeyTemplateError(
      describe(source),
      location,
      'expected a template string, an array of templates, or a function returning the key',
    );
  }
  const sources: unknown[] = single ? [source] : (source as unknown[]);
  if (sources.length === 0) {
    throw new InvalidLockKeyTemplateError('[]', location, 'a multi-key lock needs at least one template');
  }
  const templates = sources.map((s) => KeyTemplate.parse(s, root, location));
  if (root === 'argument' && shape) templates.forEach((t) => t.checkAgainst(shape, location));
  const render = (input: TInput) => templates.map((t) => t.render((placeholder) => options.rootOf(input, placeholder), location));
  return single ? (input) => render(input)[0] : render;
}

/**
 * Reads what can be known about a method's parameters without running it: `design:paramtypes`
 * lists every declared parameter (a rest parameter as its element type), and `method.length`
 * counts those before the first default or rest parameter. When the two agree there is neither,
 * so the count is exact; otherwise the last one may be a rest parameter and any index may be valid.
 * Without the metadata (a compiler that does not emit it) nothing is certain and nothing is checked.
 */
export function parameterShape(target: object, propertyKey: string | symbol, method: { readonly length: number }): ParameterShape {
  const types: unknown = Reflect.getMetadata?.('design:paramtypes', target, propertyKey);
  if (!Array.isArray(types)) return {};
  return { types, exact: method.length === types.length };
}

function checkComputedKey(key: unknown, location: string): string | string[] {
  const bad = (problem: string) => new UnresolvedLockKeyError(undefined, location, `the key function ${problem}`);
  if (typeof key === 'string') {
    if (key.length === 0) throw bad('returned an empty string');
    return key;
  }
  if (Array.isArray(key)) {
    if (key.length === 0) throw bad('returned an empty array');
    const i = key.findIndex((k) => typeof k !== 'string' || k.length === 0);
    if (i !== -1) throw bad(`returned an array whose element ${i} is ${describe(key[i])}`);
    return [...key];
  }
  if (key !== null && typeof key === 'object' && typeof (key as Promise<unknown>).then === 'function') {
    throw bad('returned a Promise; key functions must be synchronous');
  }
  throw bad(`returned ${describe(key)}`);
}

/** Why `value` cannot be part of a key, or `undefined` if it can. */
function unusable(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value.length === 0 ? 'is an empty string' : undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `is ${value}`;
    case 'bigint':
    case 'boolean':
      return undefined;
    case 'undefined':
      return 'is undefined';
    default:
      if (value === null) return 'is null';
      return `is ${describe(value)}; point the placeholder at a string or number property (e.g. <1.id>) or use a key function`;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  if (typeof value === 'function') return 'a function';
  return `${typeof value} ${String(value)}`;
}

function example(root: PlaceholderRoot): string {
  return root === 'argument' ? '<0> or <1.id>' : '<params.id> or <body.orderId>';
}
