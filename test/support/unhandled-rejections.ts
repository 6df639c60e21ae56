/**
 * The process's unhandled rejections while it listens (`start()` to `stop()`). A spec asserts that
 * `reasons` stayed empty: a promise the library forgot to handle is a bug even when every test passes.
 *
 * Under Jest (ESM, vm modules) the listener receives nothing: Jest's own handler takes the rejection
 * and fails the test that is running (or the hook), with the rejection's error and stack. The
 * assertion on `reasons` is then a second line that only the fixtures and tools running outside
 * Jest rely on; the guarantee in specs is Jest's.
 */
export class UnhandledRejections {
  readonly reasons: unknown[] = [];
  private readonly record = (reason: unknown): void => {
    this.reasons.push(reason);
  };

  start(): void {
    process.on('unhandledRejection', this.record);
  }

  stop(): void {
    process.off('unhandledRejection', this.record);
  }
}
