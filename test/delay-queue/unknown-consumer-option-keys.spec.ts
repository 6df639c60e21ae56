import { Injectable } from '@nestjs/common';
import { InvalidOptionsError, OnDelayed } from '../../lib/index.js';
import { createDelayApp } from './support/delay-test-app.js';

@Injectable()
class MisspeltConsumer {
  @OnDelayed('unknown-keys.consumer', { concurency: 5, visibilityTimout: 100 } as never)
  handle(): void {}
}

@Injectable()
class MisspeltRepeat {
  @OnDelayed('unknown-keys.repeat', { repeat: { cron: '0 2 * * *', timezone: 'UTC' } } as never)
  tick(): void {}
}

@Injectable()
class WellSpelt {
  @OnDelayed('unknown-keys.good', {
    concurrency: 1,
    visibilityTimeout: 30_000,
    maxAttempts: 2,
    backoff: { delay: 10 },
    shutdownTimeout: 1_000,
    maxIdleWait: 5_000,
    repeat: { cron: '0 2 * * *', timeZone: 'UTC', id: 'daily', payload: null, catchUp: 'none', maxAttempts: 1, backoff: { delay: 5 } },
  })
  handle(): void {}
}

/** What bootstrapping an app with `providers` fails with (undefined, the app closed again, if it starts). */
async function bootstrapError(options: Parameters<typeof createDelayApp>[0], providers: Parameters<typeof createDelayApp>[1] = []): Promise<unknown> {
  try {
    const t = await createDelayApp(options, providers);
    await t.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe('Unknown consumer option keys are refused, naming the key, where it is and the one meant', () => {
  it('@OnDelayed(topic, { concurency, visibilityTimout }) fails bootstrap', async () => {
    const error = await bootstrapError({}, [MisspeltConsumer]);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe('concurency');
    expect((error as Error).message).toContain('did you mean `concurrency`?');
    expect((error as Error).message).toContain('@OnDelayed on MisspeltConsumer.handle');
  });

  it('@OnDelayed(topic, { repeat: { cron, timezone } }) fails bootstrap', async () => {
    const error = await bootstrapError({}, [MisspeltRepeat]);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe('repeat.timezone');
    expect((error as Error).message).toContain('did you mean `timeZone`?');
    expect((error as Error).message).toContain('@OnDelayed on MisspeltRepeat.tick');
  });

  it('every documented @OnDelayed key is accepted', async () => {
    const t = await createDelayApp({}, [WellSpelt]);
    await t.close();
  });

  it('consume(topic, handler, { concurency }) throws at the call', async () => {
    const t = await createDelayApp();
    try {
      let error: unknown;
      try {
        await t.queue.consume('unknown-keys.consume', () => undefined, { concurency: 3 } as never).close();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect((error as InvalidOptionsError).option).toBe('concurency');
      expect((error as Error).message).toContain('did you mean `concurrency`?');
      expect((error as Error).message).toContain('consume("unknown-keys.consume")');
    } finally {
      await t.close();
    }
  });

  it('delayQueue.maxIdleWait is refused as a per-consumer option, saying where it goes', async () => {
    const error = await bootstrapError({ delayQueue: { maxIdleWait: 5_000 } as never });
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe('delayQueue.maxIdleWait');
    expect((error as Error).message).toMatch(/per-consumer option/);
    expect((error as Error).message).toContain('@OnDelayed(topic, { maxIdleWait })');
  });
});
