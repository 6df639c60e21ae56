/**
 * The process's unhandled rejections while it listens (`start()` to `stop()`). A spec asserts that
 * `reasons` stayed empty: a promise the library forgot to handle is a bug even when every test passes.
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
