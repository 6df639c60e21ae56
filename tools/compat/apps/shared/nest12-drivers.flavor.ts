/** Nest 12, `nest new --type cjs` (CommonJS output), with redis 6, @valkey/valkey-glide 2 and iovalkey 0.4, and no ioredis. */
import type { DriverAppFlavor } from './driver-checks.js';

export const flavor: DriverAppFlavor = {
  app: 'nest12-drivers',
  appRequire: require,
};
