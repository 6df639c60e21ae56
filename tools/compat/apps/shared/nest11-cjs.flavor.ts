/**
 * Nest 11's `nest new` (CommonJS output, TypeScript 5), ioredis 5, typeorm. No prom-client: it is the
 * one optional peer that brings @opentelemetry/api along, and this app shows the package without it.
 */
import type { AppFlavor } from './app-flavor.js';
import { nestjsClsTransactionCheck } from './cls-transactions.js';
import { withoutPromClient } from './metrics-absent.js';
import { typeormTransactionalCheck } from './typeorm-transactions.js';
import { withoutOpenTelemetry } from './without-open-telemetry.js';

export const flavor: AppFlavor = {
  app: 'nest11-cjs',
  moduleSystem: 'commonjs',
  appRequire: require,
  loadTheOtherWay: () => import('nestjs-redis-lock'),
  tracing: withoutOpenTelemetry(require),
  metrics: withoutPromClient,
  extraChecks: [nestjsClsTransactionCheck, typeormTransactionalCheck],
  notRun: [],
};
