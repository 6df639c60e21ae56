import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { DelayQueueService, InvalidJobError, InvalidOptionsError } from '../../lib/index.js';
import { createLockApp, rawRedis, uniquePrefix } from '../support/test-app.js';
import { refusal as outcome } from '../support/refusal.js';
import { waitFor } from '../support/timing.js';

const KIB = 1024;

/** A payload whose JSON is exactly `bytes` UTF-8 bytes: {"blob":"xxx…"}. */
function payloadOf(bytes: number): { blob: string } {
  return { blob: 'x'.repeat(bytes - '{"blob":""}'.length) };
}

/**
 * docs/security.md, "Limits": a caller cannot make Redis hold a job body of any size. Above
 * `delayQueue.maxPayloadBytes` (default 512 KiB of JSON) schedule, scheduleMany and repeat refuse
 * with `InvalidJobError` naming the size, and nothing is written; the limit can be raised.
 */
describe('payload size limit', () => {
  const apps: TestingModule[] = [];
  const redis = rawRedis();
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    redis.disconnect();
  });
  const start = async (delayQueue: Record<string, unknown> = {}) => {
    const keyPrefix = uniquePrefix('pl');
    const app = await createLockApp({ keyPrefix, delayQueue });
    app.useLogger(false);
    apps.push(app);
    return { queue: app.get(DelayQueueService), keyPrefix, keys: async () => (await redis.keys(`${keyPrefix}:*`)).sort() };
  };

  it('refuses a payload over 512 KiB by default, naming its size and the option, and writes nothing', async () => {
    const { queue, keys } = await start();
    await queue.schedule('pl.edge', payloadOf(512 * KIB), { id: 'at-limit', delay: 60_000 });
    const before = await keys();

    const refused = await outcome(() => queue.schedule('pl.big', payloadOf(512 * KIB + 1), { delay: 60_000 }));
    expect(refused).toBeInstanceOf(InvalidJobError);
    expect((refused as Error).message).toMatch(/payload.*524289 bytes.*524288.*delayQueue\.maxPayloadBytes/);

    const sixteen = await outcome(() => queue.schedule('pl.big', { blob: 'x'.repeat(16 * KIB * KIB) }));
    expect((sixteen as Error).message).toMatch(/16777227 bytes/);

    const batch = await outcome(() =>
      queue.scheduleMany<unknown>('pl.batch', [
        { payload: 1, delay: 60_000 },
        { payload: payloadOf(600 * KIB), delay: 60_000 },
      ]),
    );
    expect(batch).toBeInstanceOf(InvalidJobError);
    expect((batch as Error).message).toMatch(/jobs\[1\]\.payload.*614400 bytes/);

    const repeat = await outcome(() => queue.repeat('pl.repeat', { every: 60_000 }, { payload: payloadOf(513 * KIB) }));
    expect(repeat).toBeInstanceOf(InvalidJobError);
    expect((repeat as Error).message).toMatch(/repeat\.payload.*525312 bytes/);

    // Multi-byte characters count as their UTF-8 bytes, not as UTF-16 units.
    const emoji = await outcome(() => queue.schedule('pl.big', { blob: '😀'.repeat(140 * KIB) }));
    expect((emoji as Error).message).toMatch(/573451 bytes/);

    expect(await keys()).toEqual(before);
  });

  it('accepts larger payloads once maxPayloadBytes is raised, and delivers them intact', async () => {
    const { queue } = await start({ maxPayloadBytes: 12 * KIB * KIB });
    const payload = { blob: 'x'.repeat(10 * KIB * KIB - 20) + '😀 end' };
    const id = await queue.schedule('pl.raised', payload);
    const received: string[] = [];
    const consumer = queue.consume<typeof payload>('pl.raised', (p) => {
      received.push(p.blob.slice(-6));
    });
    try {
      await waitFor(() => received.length === 1, 20_000, 'the 10 MB job to run');
      await waitFor(async () => (await queue.get('pl.raised', id)) === null, 10_000, 'the acknowledgement');
      expect(received).toEqual([payload.blob.slice(-6)]);
    } finally {
      await consumer.close();
    }
  });

  it(
    'does not keep a handler result over maxPayloadBytes: the job completes, is kept without it, and ' + 'a warning names the size',
    async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        const { queue, keyPrefix } = await start({ maxPayloadBytes: 64 * KIB });
        // A 14-byte payload whose handler returns a result as large as it asks for (the review's repro, scaled down with the limit).
        const consumer = queue.consume<{ n: number }>('pl.result', ({ n }) => payloadOf(n), { keepCompleted: { count: 100 } });
        try {
          await queue.schedule('pl.result', { n: 64 * KIB }, { id: 'at-limit' });
          await queue.schedule('pl.result', { n: KIB * KIB }, { id: 'huge' });
          await waitFor(async () => (await queue.get('pl.result', 'huge'))?.state === 'completed', 20_000, 'the huge job to complete');
          await waitFor(
            async () => (await queue.get('pl.result', 'at-limit'))?.state === 'completed',
            20_000,
            'the job at the limit to complete',
          );
          const huge = await queue.get('pl.result', 'huge');
          expect(huge).toMatchObject({ state: 'completed', attempts: 1, payload: { n: KIB * KIB } });
          expect({ resultKept: huge !== null && 'result' in huge }).toEqual({ resultKept: false });
          expect((await queue.get('pl.result', 'at-limit'))?.result).toEqual(payloadOf(64 * KIB));
          expect(await redis.memory('USAGE', `${keyPrefix}:dq:{pl.result}:results`)).toBeLessThan(128 * KIB);
          expect(warn.mock.calls.map(([message]) => String(message)).join('\n')).toMatch(
            new RegExp(
              'Job "huge" of topic "pl.result" completed, but its result is not kept: ' +
                '.*result.*1048576 bytes.*65536.*delayQueue\\.maxPayloadBytes',
            ),
          );
          // The job ran and was scheduled: the warning speaks of its result only.
          expect(warn.mock.calls.map(([message]) => String(message)).join('\n')).not.toMatch(/Nothing was scheduled/);
        } finally {
          await consumer.close();
        }
      } finally {
        warn.mockRestore();
      }
    },
  );

  it('refuses at bootstrap a maxPayloadBytes that is not a whole number of bytes from 1 KiB to 512 MiB', async () => {
    for (const maxPayloadBytes of [0, 1023, 1.5, '512k', 512 * KIB * KIB + 1]) {
      const error = await outcome(() => createLockApp({ delayQueue: { maxPayloadBytes: maxPayloadBytes as number } }));
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect(error.message).toMatch(/delayQueue\.maxPayloadBytes/);
    }
  });
});
