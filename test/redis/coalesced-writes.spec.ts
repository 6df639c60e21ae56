import type { TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { LockService } from '../../lib/index.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { COMMANDS_PER_WRITE } from '../../lib/core/redis/coalesce-writes.js';
import { createLockApp } from '../support/test-app.js';
import { within } from '../support/timing.js';
import { watchSocketWrites } from '../support/socket-writes.js';

interface DestroyableSocket {
  destroy(): void;
}

/**
 * The module's command connection sends the commands of one event-loop turn in one socket write per
 * COMMANDS_PER_WRITE commands (lib/core/redis/coalesce-writes.ts): counted here at the socket
 * (`_write` / `_writev` calls), on a real Redis, with the replies checked, across a reconnect too.
 */
describe('few socket writes per event-loop turn on the module connection', () => {
  let app: TestingModule;
  let client: Redis;

  beforeAll(async () => {
    app = await createLockApp();
    client = app.get(RedisConnection).client as Redis;
    await client.ping();
  });
  afterAll(() => app?.close());

  /** Counts the socket writes of the client's current connection until the returned stop() is called. */
  const countWrites = (): (() => number) => watchSocketWrites(client).stop;

  it('sends 100 commands issued in one turn with one write per COMMANDS_PER_WRITE, and answers each its own reply', async () => {
    const keys = Array.from({ length: 100 }, (_, i) => `coalesced:${i}`);
    await client.mset(...keys.flatMap((key, i) => [key, `v${i}`]));
    const stop = countWrites();
    const replies = await Promise.all(keys.map((key) => client.get(key)));
    expect(stop()).toBe(Math.ceil(100 / COMMANDS_PER_WRITE));
    expect(replies).toEqual(keys.map((_, i) => `v${i}`));
  });

  it('sends up to COMMANDS_PER_WRITE commands of one turn with one write', async () => {
    const stop = countWrites();
    const replies = await Promise.all(Array.from({ length: COMMANDS_PER_WRITE }, (_, i) => client.echo(`c${i}`)));
    expect(stop()).toBe(1);
    expect(replies).toEqual(Array.from({ length: COMMANDS_PER_WRITE }, (_, i) => `c${i}`));
  });

  it('sends the commands of separate turns with separate writes (nothing waits for a later turn)', async () => {
    const stop = countWrites();
    for (let i = 0; i < 5; i++) expect(await client.echo(`turn ${i}`)).toBe(`turn ${i}`);
    expect(stop()).toBe(5);
  });

  it('keeps coalescing after a reconnect, and the locks work across it', async () => {
    const locks = app.get(LockService);
    const reconnected = new Promise((resolve) => client.once('ready', resolve));
    (client as unknown as { stream: DestroyableSocket }).stream.destroy();
    await within(reconnected, 10_000, 'the reconnect');
    const stop = countWrites();
    const handles = await Promise.all(Array.from({ length: 20 }, (_, i) => locks.acquire(`coalesced-lock:${i}`, { leaseTime: 10_000 })));
    expect(stop()).toBe(Math.ceil(20 / COMMANDS_PER_WRITE));
    expect(handles.every((handle) => handle.held)).toBe(true);
    await Promise.all(handles.map((handle) => handle.release()));
    expect(await Promise.all(handles.map((handle) => locks.isLocked(handle.key)))).toEqual(handles.map(() => false));
  });
});
