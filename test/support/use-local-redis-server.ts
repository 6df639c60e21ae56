import { startLocalRedisServer, type LocalRedisServer, type LocalRedisServerOptions } from '../../lib/testing/local-redis-server.js';

/**
 * A private redis-server for a describe block: started before its tests, stopped after them. The
 * returned object reads through to the running server, so the tests use it as they would the server.
 * Its `afterAll` runs where it is declared among the block's (Jest keeps their order): declare it
 * after nothing that needs the server at close, or close that in a test.
 */
export function useLocalRedisServer(options: LocalRedisServerOptions = {}): LocalRedisServer {
  let server: LocalRedisServer | undefined;
  beforeAll(async () => {
    server = await startLocalRedisServer(options);
  });
  afterAll(() => server?.stop());
  const running = (): LocalRedisServer => {
    if (!server) throw new Error('the Redis server is not started: read it in a hook or test, after useLocalRedisServer');
    return server;
  };
  return {
    get url() {
      return running().url;
    },
    get port() {
      return running().port;
    },
    get dir() {
      return running().dir;
    },
    get process() {
      return running().process;
    },
    stop: () => running().stop(),
    restart: (restartOptions) => running().restart(restartOptions),
    [Symbol.asyncDispose]: () => running()[Symbol.asyncDispose](),
  };
}
