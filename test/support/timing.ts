/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What a check returns while the awaited state has not come yet: any falsy value. */
type NotYet = false | 0 | '' | null | undefined;

export interface WaitOptions {
  /** Pause between two checks, in ms (default 10). */
  readonly every?: number;
  /**
   * A check that throws counts as "not yet" (a server failing over, an app still starting); the last
   * error is named if the wait times out. Off by default: the first error fails the wait.
   */
  readonly retryErrors?: boolean;
}

/**
 * Resolves with the first truthy value of `check` (so a predicate resolves with `true`, a probe with
 * what it found); rejects after `timeoutMs` naming `what` (a function: read when the wait fails).
 * The check runs at least once, even when `timeoutMs` has already passed.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  what: string | (() => string),
  options: WaitOptions = {},
): Promise<Exclude<T, NotYet>> {
  const outcome = await poll(check, timeoutMs, options);
  if ('value' in outcome) return outcome.value;
  const { lastError } = outcome;
  const cause = lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}${cause}`);
}

/**
 * Whether `check` comes to hold within `timeoutMs`, for a spec that asserts on the answer
 * (`expect(await holdsWithin(…)).toBe(true)`) rather than failing inside the wait.
 */
export async function holdsWithin(check: () => boolean | Promise<boolean>, timeoutMs: number, options: WaitOptions = {}): Promise<boolean> {
  return 'value' in (await poll(check, timeoutMs, options));
}

async function poll<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  { every = 10, retryErrors = false }: WaitOptions,
): Promise<{ value: Exclude<T, NotYet> } | { lastError: unknown }> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return { value: value as Exclude<T, NotYet> };
    } catch (error) {
      if (!retryErrors) throw error;
      lastError = error;
    }
    if (performance.now() > deadline) return { lastError };
    await sleep(every);
  }
}

/** Resolves with `promise`, or fails with `what` after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} (waited ${ms} ms)`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What `promise` settled to (its value, or its rejection reason as a value) within `ms`, or
 * `'pending'`. Unlike racing it against `sleep(ms)`, the timer is cleared once it settles, so no
 * timer outlives the spec and keeps its Jest worker alive.
 */
export async function outcomeWithin<T>(promise: Promise<T>, ms: number): Promise<T | unknown | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms)));
  try {
    return await Promise.race([
      promise.then(
        (value) => value,
        (error: unknown) => error,
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with the signal's abort reason once it aborts (at once if it already has). */
export function abortReason(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });
}

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

/** A promise with its resolve function: lets a handler or a locked method wait until the test lets it go on. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
