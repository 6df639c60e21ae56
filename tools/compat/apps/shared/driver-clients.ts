/**
 * The three non-ioredis drivers as an application holds them: how it names each in the `redis`
 * option, and a client of its own that it opens, passes in as `{ client }`, and keeps using after
 * the module has closed (the module must never close a client it was given).
 */
import { GlideClient } from '@valkey/valkey-glide';
import { Redis as Valkey } from 'iovalkey';
import type { RedisConnectionOptions } from 'nestjs-redis-lock';
import { createClient } from 'redis';

export type DriverName = 'iovalkey' | 'node-redis' | 'valkey-glide';

/** A client the application opened itself. */
export interface UserClient {
  /** The `redis` option that hands it to the module (GLIDE adds the URL for the module's own connections). */
  readonly option: RedisConnectionOptions;
  /** What is wrong with it if it is no longer usable (closed, not ready, PING failed); undefined when it is fine. */
  problem(): Promise<string | undefined>;
  close(): Promise<void>;
}

export interface DriverUnderTest {
  readonly driver: DriverName;
  /** Its npm package, the app's dependency. */
  readonly packageName: string;
  /** `{ driver, url }`: the module builds (and closes) every connection. */
  byDriver(url: string): RedisConnectionOptions;
  /** Opens (and connects) a client the way the driver's own README does. */
  openClient(url: string): Promise<UserClient>;
}

async function pingProblem(ping: () => Promise<unknown>): Promise<string | undefined> {
  try {
    const reply = await ping();
    return String(reply) === 'PONG' ? undefined : `PING answered ${JSON.stringify(reply)}`;
  } catch (error) {
    return `PING failed: ${String(error)}`;
  }
}

const iovalkey: DriverUnderTest = {
  driver: 'iovalkey',
  packageName: 'iovalkey',
  byDriver: (url) => ({ driver: 'iovalkey', url }),
  async openClient(url) {
    const client = new Valkey(url, { lazyConnect: true });
    await client.connect();
    return {
      option: { client },
      async problem() {
        if (client.status !== 'ready') return `status ${client.status}, not ready`;
        return pingProblem(() => client.ping());
      },
      async close() {
        await client.quit();
      },
    };
  },
};

const nodeRedis: DriverUnderTest = {
  driver: 'node-redis',
  packageName: 'redis',
  byDriver: (url) => ({ driver: 'node-redis', url }),
  async openClient(url) {
    const client = createClient({ url });
    const errors: unknown[] = [];
    client.on('error', (error: unknown) => errors.push(error));
    await client.connect();
    return {
      option: { client },
      async problem() {
        if (!client.isOpen || !client.isReady) return `isOpen ${client.isOpen}, isReady ${client.isReady}`;
        if (errors.length > 0) return `it emitted 'error': ${String(errors[0])}`;
        return pingProblem(() => client.ping());
      },
      async close() {
        client.destroy();
      },
    };
  },
};

const valkeyGlide: DriverUnderTest = {
  driver: 'valkey-glide',
  packageName: '@valkey/valkey-glide',
  byDriver: (url) => ({ driver: 'valkey-glide', url }),
  async openClient(url) {
    const { hostname, port } = new URL(url);
    const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
    let closed = false;
    return {
      // GLIDE clients cannot be duplicated: the URL is where the module opens its own connections.
      option: { client, url },
      async problem() {
        return closed ? 'closed by the check itself' : pingProblem(() => client.ping());
      },
      async close() {
        closed = true;
        client.close();
      },
    };
  },
};

export const DRIVERS_UNDER_TEST: readonly DriverUnderTest[] = [iovalkey, nodeRedis, valkeyGlide];
