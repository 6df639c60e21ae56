/**
 * Nest 12, `nest new --type cjs` (CommonJS output), with typeorm 1.x: ioredis 5 (typeorm 1 still
 * declares peerOptional ioredis@^5), typeorm-transactional, @nestjs-cls/transactional's TypeORM
 * adapter, pg, sql.js, prom-client, no OpenTelemetry SDK.
 */
import type { AppFlavor } from './app-flavor.js';
import { nestjsClsTransactionCheck } from './cls-transactions.js';
import { prometheusMetrics } from './metrics-subpath.js';
import { typeormTransactionalCheck } from './typeorm-transactions.js';
import { clsTypeOrmOutboxCheck, typeormTransactionalOutboxCheck } from './typeorm-outbox.js';
import { withOpenTelemetryApiOnly } from './without-open-telemetry.js';

export const flavor: AppFlavor = {
  app: 'nest12-typeorm1',
  moduleSystem: 'commonjs',
  appRequire: require,
  loadTheOtherWay: () => import('nestjs-redis-lock'),
  tracing: withOpenTelemetryApiOnly(require),
  metrics: prometheusMetrics,
  extraChecks: [nestjsClsTransactionCheck, typeormTransactionalCheck, typeormTransactionalOutboxCheck, clsTypeOrmOutboxCheck],
  notRun: [],
};
