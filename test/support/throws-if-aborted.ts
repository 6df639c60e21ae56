/** Whether `signal.throwIfAborted()` throws: what code that checks its signal sees. */
export function throwsIfAborted(signal: AbortSignal): boolean {
  try {
    signal.throwIfAborted();
    return false;
  } catch {
    return true;
  }
}
