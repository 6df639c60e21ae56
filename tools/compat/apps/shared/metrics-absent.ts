/**
 * The app without prom-client (an optional peer, and the one that brings @opentelemetry/api along as
 * its own dependency): everything but `nestjs-redis-lock/metrics` works, and importing that subpath
 * fails with Node's plain "cannot find prom-client", which tells the user what to install.
 */
import type { MetricsProbe } from './app-flavor.js';
import { assert } from './check-list.js';

export const withoutPromClient: MetricsProbe = {
  label: 'no prom-client',
  imports: [],
  controllers: [],
  async verify(checks) {
    await checks.run('nestjs-redis-lock/metrics without prom-client: a clear "cannot find prom-client"', async () => {
      // Not a literal: the types of the subpath need prom-client, which this app does not have.
      const specifier: string = 'nestjs-redis-lock/metrics';
      let failure: unknown;
      try {
        await import(specifier);
      } catch (error) {
        failure = error;
      }
      assert(failure !== undefined, 'nestjs-redis-lock/metrics loaded although prom-client is not installed');
      const { code, message } = failure as { code?: string; message?: string };
      assert(
        (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String(message).includes("'prom-client'"),
        `importing nestjs-redis-lock/metrics without prom-client failed with ${String(code)}: ${String(message)}`,
      );
    });
  },
};
