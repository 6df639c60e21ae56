import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { OnOneInstance, RedisLockEvents } from '../../lib/index.js';
import type { OneInstanceSkippedEvent } from '../../lib/core/events/scheduling-events.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { createRedisLockTestingModule } from '../../lib/testing/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { initOrCloseConnections, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';

@Injectable()
class Ticker {
  runs = 0;
  @OnOneInstance({ key: 'down.tick', ttl: 60_000 })
  async tick(): Promise<'ran'> {
    this.runs++;
    return 'ran';
  }
}

/**
 * An `@OnOneInstance` call that cannot reach Redis resolves `undefined` without running (the lease
 * cannot be confirmed: running could run the tick twice), emits `one-instance.skipped` with
 * `'not-owner'`, and is counted in the outage log; it no longer rejects with RedisConnectionError,
 * which `@nestjs/schedule` logged with its stack on every tick. Once Redis is back the calls run again.
 */
describe('@OnOneInstance while Redis is unreachable', () => {
  let server: LocalRedisServer;
  let app: TestingModule | undefined;
  beforeAll(async () => {
    server = await startLocalRedisServer();
  });
  afterAll(async () => {
    await app?.close();
    await server.stop();
  });

  it('resolves undefined without running, emits one-instance.skipped (not-owner), and runs again once Redis is back', async () => {
    app = await initOrCloseConnections(
      await createRedisLockTestingModule({
        redis: server.url,
        redisLock: { keyPrefix: uniquePrefix('down-tick') },
        providers: [Ticker],
      }).compile(),
    );
    app.useLogger(false);
    const ticker = app.get(Ticker);
    const connection = app.get(RedisConnection);
    const skipped: OneInstanceSkippedEvent[] = [];
    (app.get(RedisLockEvents) as unknown as NodeJS.EventEmitter).on('one-instance.skipped', (event: OneInstanceSkippedEvent) =>
      skipped.push(event),
    );
    expect(await ticker.tick()).toBe('ran');

    let bringBack!: () => void;
    const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    await waitFor(() => connection.reachability?.isUnreachable, 10_000, 'the connection to count as unreachable');
    await expect(ticker.tick()).resolves.toBeUndefined();
    await expect(ticker.tick()).resolves.toBeUndefined();
    expect(ticker.runs).toBe(1);
    expect(skipped).toEqual([
      { key: 'down.tick', method: 'Ticker.tick', reason: 'not-owner' },
      { key: 'down.tick', method: 'Ticker.tick', reason: 'not-owner' },
    ]);
    expect(connection.outages.active).toBe(true);

    bringBack();
    await restarted;
    await waitFor(() => !connection.outages.active, 10_000, 'the outage to end');
    // The restarted Redis lost the lease: the next call takes it afresh and runs.
    await waitFor(async () => (await ticker.tick()) === 'ran', 10_000, 'a call to run again', { retryErrors: true });
    expect(ticker.runs).toBe(2);
  }, 30_000);
});
