/** Nest 12's default `nest new` (ESM output), ioredis 6, prom-client, the OpenTelemetry SDK registered. */
import { createRequire } from 'node:module';
import type { AppFlavor, LibraryModule } from './app-flavor.js';
import { TYPEORM_WITH_IOREDIS_6 } from './caveats.js';
import { nestjsClsTransactionCheck } from './cls-transactions.js';
import { prometheusMetrics } from './metrics-subpath.js';
import { withOpenTelemetry } from './with-open-telemetry.js';

const appRequire = createRequire(import.meta.url);

export const flavor: AppFlavor = {
  app: 'nest12-esm',
  moduleSystem: 'esm',
  appRequire,
  loadTheOtherWay: async () => appRequire('nestjs-redis-lock') as LibraryModule,
  tracing: withOpenTelemetry(),
  metrics: prometheusMetrics,
  extraChecks: [nestjsClsTransactionCheck],
  notRun: [TYPEORM_WITH_IOREDIS_6],
};
