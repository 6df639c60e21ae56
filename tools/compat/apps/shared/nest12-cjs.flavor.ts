/** Nest 12, `nest new --type cjs` (CommonJS output), ioredis 6, prom-client, no OpenTelemetry SDK. */
import type { AppFlavor } from './app-flavor.js';
import { TYPEORM_WITH_IOREDIS_6 } from './caveats.js';
import { nestjsClsTransactionCheck } from './cls-transactions.js';
import { prometheusMetrics } from './metrics-subpath.js';
import { withOpenTelemetryApiOnly } from './without-open-telemetry.js';

export const flavor: AppFlavor = {
  app: 'nest12-cjs',
  moduleSystem: 'commonjs',
  appRequire: require,
  loadTheOtherWay: () => import('nestjs-redis-lock'),
  tracing: withOpenTelemetryApiOnly(require),
  metrics: prometheusMetrics,
  extraChecks: [nestjsClsTransactionCheck],
  notRun: [TYPEORM_WITH_IOREDIS_6],
};
