/**
 * The consumer apps' tiny check harness (copied into each app as `src/compat/`). Every result is one
 * line on stdout that `tools/compat/run-compat.js` reads:
 *   COMPAT ok <check> (<ms> ms)
 *   COMPAT FAIL <check>: <what went wrong>
 *   COMPAT note <text>
 * Checks keep running after a failure, so one run reports every broken thing at once.
 */

/** A check's expectation did not hold; the message says what was expected and what was seen. */
export class CompatFailure extends Error {
  override name = 'CompatFailure';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CompatFailure(message);
}

export function assertEqual<T>(actual: T, expected: T, what: string): void {
  if (actual !== expected) {
    throw new CompatFailure(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** `promise`, or a CompatFailure naming `what` when it has not settled within `ms` (generous: the machine is shared). */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CompatFailure(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function describeError(error: unknown): string {
  if (error instanceof CompatFailure) return error.message;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${code === undefined ? '' : ` [${String(code)}]`}: ${error.message}\n${indent(error.stack ?? '')}`;
  }
  return String(error);
}

function indent(text: string): string {
  return text
    .split('\n')
    .slice(1)
    .map((line) => `      ${line.trim()}`)
    .join('\n');
}

/** Runs named checks, prints one COMPAT line per check, and remembers the failures. */
export class CheckList {
  readonly failures: string[] = [];
  passed = 0;

  async run(name: string, check: () => Promise<void> | void): Promise<boolean> {
    const started = performance.now();
    try {
      await check();
    } catch (error) {
      this.fail(name, error);
      return false;
    }
    this.passed += 1;
    console.log(`COMPAT ok ${name} (${Math.round(performance.now() - started)} ms)`);
    return true;
  }

  fail(name: string, error: unknown): void {
    this.failures.push(name);
    console.log(`COMPAT FAIL ${name}: ${describeError(error)}`);
  }

  note(text: string): void {
    console.log(`COMPAT note ${text}`);
  }
}
