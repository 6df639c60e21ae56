/**
 * This app has no ioredis, and the package's declarations still import types from it: its published
 * `core/options/redis-lock-module-options.interface.d.ts` (`Cluster`, `ClusterNode`, `ClusterOptions`,
 * `Redis`, `RedisOptions`, for `RedisConnectionOptions` and `RedlockClientOptions`) and
 * `core/redis/reconnect-strategy.d.ts` (`Redis`, `RedisOptions`, in `withLockReconnect` and
 * `reconnectOverrideFor` beside the exported `lockReconnectStrategy`). With `skipLibCheck: false` the
 * app's compile fails on them (TS2307 "Cannot find module 'ioredis'"); with the template's `true` it
 * passes and those types are silently `any`. These stand-ins, the loosest shapes that fit, are what such
 * an app needs to compile with its declarations checked until the package's types stop naming ioredis.
 */
declare module 'ioredis' {
  export type Redis = object;
  export type Cluster = object;
  export type RedisOptions = Record<string, unknown>;
  export type ClusterOptions = Record<string, unknown>;
  export type ClusterNode = string | number | { host?: string; port?: number };
}
