import { startLocalRedisServer, type LocalRedisServer, type LocalRedisServerOptions } from '../../lib/testing/local-redis-server.js';
import { readThrough, useResource } from './use-resource.js';

/** A private redis-server for a describe block (`useResource`): started before its tests, stopped after them. */
export function useLocalRedisServer(options: LocalRedisServerOptions = {}): LocalRedisServer {
  return useResource(
    'the Redis server',
    () => startLocalRedisServer(options),
    (server) => server.stop(),
  );
}

/** A private redis-server and the app built on it, both read through. */
export interface AppOnLocalRedis<T extends object> {
  readonly server: LocalRedisServer;
  readonly app: T;
}

/**
 * A private redis-server and the app `start` builds on it, for a describe block: the server starts
 * first; after the tests the app is let go (`stop`) before the server stops, whatever it was left in.
 */
export function useAppOnLocalRedis<T extends object>(
  start: (server: LocalRedisServer) => Promise<T>,
  stop: (app: T, server: LocalRedisServer) => Promise<unknown>,
  options: LocalRedisServerOptions = {},
): AppOnLocalRedis<T> {
  let started: { server: LocalRedisServer; app: T } | undefined;
  beforeAll(async () => {
    const server = await startLocalRedisServer(options);
    try {
      started = { server, app: await start(server) };
    } catch (error) {
      await server.stop();
      throw error;
    }
  });
  afterAll(async () => {
    if (!started) return;
    await stop(started.app, started.server);
    await started.server.stop();
  });
  return {
    server: readThrough('the Redis server', () => started?.server),
    app: readThrough('the app on the Redis server', () => started?.app),
  };
}
