import { Injectable } from '@nestjs/common';
import { InvalidOptionsError, OnDelayed } from '../../lib/index.js';
import { createDelayApp } from './support/delay-test-app.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { rejectionOf, startupFailure } from '../support/thrown.js';

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
function bootstrapError(
  options: Parameters<typeof createDelayApp>[0],
  providers: Parameters<typeof createDelayApp>[1] = [],
): Promise<unknown> {
  return startupFailure(() => createDelayApp(options, providers));
}

describe('Unknown consumer option keys are refused, naming the key, where it is and the one meant', () => {
  it('@OnDelayed(topic, { concurency, visibilityTimout }) fails bootstrap', async () => {
    const error = await bootstrapError({}, [MisspeltConsumer]);
    expectInvalidOption(error, 'concurency', 'did you mean `concurrency`?', '@OnDelayed on MisspeltConsumer.handle');
  });

  it('@OnDelayed(topic, { repeat: { cron, timezone } }) fails bootstrap', async () => {
    const error = await bootstrapError({}, [MisspeltRepeat]);
    expectInvalidOption(error, 'repeat.timezone', 'did you mean `timeZone`?', '@OnDelayed on MisspeltRepeat.tick');
  });

  it('every documented @OnDelayed key is accepted', async () => {
    const t = await createDelayApp({}, [WellSpelt]);
    await t.close();
  });

  it('consume(topic, handler, { concurency }) throws at the call', async () => {
    const t = await createDelayApp();
    try {
      const error = await rejectionOf(() => t.queue.consume('unknown-keys.consume', () => undefined, { concurency: 3 } as never).close());
      expectInvalidOption(error, 'concurency', 'did you mean `concurrency`?', 'consume("unknown-keys.consume")');
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
