/** The Redis clients the module speaks through (the `redis.driver` option). */
export const REDIS_DRIVERS = ['ioredis', 'iovalkey', 'node-redis', 'valkey-glide'] as const;

/** One of `REDIS_DRIVERS`. */
export type RedisDriverName = (typeof REDIS_DRIVERS)[number];

/** The npm package of each driver: each is an optional peer of this package, installed by the app. */
export const DRIVER_PACKAGES: Readonly<Record<RedisDriverName, string>> = {
  ioredis: 'ioredis',
  iovalkey: 'iovalkey',
  'node-redis': 'redis',
  'valkey-glide': '@valkey/valkey-glide',
};
