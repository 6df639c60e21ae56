import type { INestApplicationContext } from '@nestjs/common';

/**
 * In a child-process fixture: on SIGTERM run `before`, close the Nest app (its shutdown hooks run),
 * then `after`, and exit 0; a failed close is printed and exits 1, so the parent sees it.
 */
export function closeOnSigterm(app: INestApplicationContext, hooks: { before?: () => void; after?: () => Promise<unknown> } = {}): void {
  process.once('SIGTERM', () => {
    hooks.before?.();
    void app.close().then(
      async () => {
        await hooks.after?.();
        process.exit(0);
      },
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
