const CHECK = Symbol.for('nestjs-redis-lock:lease-check');

interface CheckedSignal extends AbortSignal {
  [CHECK]?: () => void;
}

const base = AbortSignal.prototype;
const abortedOf = Object.getOwnPropertyDescriptor(base, 'aborted')!.get!;
const reasonOf = Object.getOwnPropertyDescriptor(base, 'reason')!.get!;

/**
 * The prototype of a lease's signal (a lock's, a claimed job's): an `AbortSignal` whose `aborted`, `reason` and `throwIfAborted()`
 * first run the lease check, so a read made the moment the event loop runs again after a
 * pause (a user timer that was due before the lease's end runs before the library's own timer)
 * already sees the lease lost. Everything else, listeners included, is the plain `AbortSignal`.
 */
const CHECKED_SIGNAL = Object.create(base, {
  aborted: {
    configurable: true,
    enumerable: true,
    get(this: CheckedSignal): boolean {
      this[CHECK]?.();
      return abortedOf.call(this) as boolean;
    },
  },
  reason: {
    configurable: true,
    enumerable: true,
    get(this: CheckedSignal): unknown {
      this[CHECK]?.();
      return reasonOf.call(this);
    },
  },
  throwIfAborted: {
    configurable: true,
    writable: true,
    value(this: CheckedSignal): void {
      this[CHECK]?.();
      base.throwIfAborted.call(this);
    },
  },
}) as AbortSignal;

/**
 * `signal.aborted` without running a check set by `checkedOnRead`: for the check itself and the
 * code it calls, which must not read the signal through its own check.
 */
export function abortedUnchecked(signal: AbortSignal): boolean {
  return abortedOf.call(signal) as boolean;
}

/** `signal.reason` without running a check set by `checkedOnRead` (see `abortedUnchecked`). */
export function reasonUnchecked(signal: AbortSignal): unknown {
  return reasonOf.call(signal);
}

/**
 * Makes `signal` run `check` whenever it is read (`aborted`, `reason`, `throwIfAborted()`), before
 * answering. `check` aborts the signal's controller, synchronously, when the lease it stands for is
 * over by the monotonic clock; it must be cheap and must not read `signal` itself. Returns `signal`,
 * still an `AbortSignal` (`instanceof`, `AbortSignal.any`, `fetch`, listeners all work as before).
 * `AbortSignal.any` and Node's APIs read `aborted` once, when they are given the signal: later they
 * follow its abort event only, which fires when the check or the owner's own timer aborts it. A
 * listener added with `addEventListener('abort')` fires when the check aborts, from inside that read.
 */
export function checkedOnRead(signal: AbortSignal, check: () => void): AbortSignal {
  const checked = signal as CheckedSignal;
  checked[CHECK] = check;
  Object.setPrototypeOf(checked, CHECKED_SIGNAL);
  return checked;
}
