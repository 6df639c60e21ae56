import { InvalidOptionsError, type ConsumerOptions } from '../../../../lib/index.js';
import { resolveRedisLockConfig } from '../../../../lib/core/options/resolve-redis-lock-config.js';
import { resolveConsumerOptions } from '../../../../lib/delay-queue/consumer/resolve-consumer-options.js';
import { refusedWith } from '../../../support/thrown.js';

const defaults = resolveRedisLockConfig({
  delayQueue: { concurrency: 4, maxAttempts: 7, backoff: { delay: 50, jitter: 0 }, shutdownTimeout: 2_000 },
}).delayQueue;
const where = 'consume("orders")';

function refusal(options: unknown): InvalidOptionsError {
  return refusedWith(InvalidOptionsError, () => resolveConsumerOptions(options as ConsumerOptions, defaults, where), options);
}

describe("resolveConsumerOptions: a consumer's options over the module's delayQueue defaults", () => {
  it("takes the module's settings, and a 10 s idle wait, when nothing is given", () => {
    expect(resolveConsumerOptions(undefined, defaults, where)).toEqual({
      concurrency: 4,
      visibilityTimeout: 30_000,
      maxAttempts: 7,
      backoff: { delay: 50, factor: 2, maxDelay: 3_600_000, jitter: 0 },
      shutdownTimeout: 2_000,
      maxIdleWait: 10_000,
    });
    expect(resolveConsumerOptions({}, defaults, where)).toEqual(resolveConsumerOptions(undefined, defaults, where));
  });

  it("keeps given values; a partial backoff is merged over the module's", () => {
    expect(
      resolveConsumerOptions(
        { concurrency: 10_000, visibilityTimeout: 100, maxAttempts: 1, backoff: { factor: 3 }, shutdownTimeout: 0, maxIdleWait: 100.7 },
        defaults,
        where,
      ),
    ).toEqual({
      concurrency: 10_000,
      visibilityTimeout: 100,
      maxAttempts: 1,
      backoff: { delay: 50, factor: 3, maxDelay: 3_600_000, jitter: 0 },
      shutdownTimeout: 0,
      maxIdleWait: 100,
    });
  });

  it.each<[string, unknown, string]>([
    ['a concurrency of 0', { concurrency: 0 }, 'concurrency'],
    ['a concurrency over 10000', { concurrency: 10_001 }, 'concurrency'],
    ['a null concurrency', { concurrency: null }, 'concurrency'],
    ['a visibilityTimeout below 100 ms', { visibilityTimeout: 99 }, 'visibilityTimeout'],
    ['maxAttempts over a million', { maxAttempts: 1_000_001 }, 'maxAttempts'],
    ['a fractional maxAttempts', { maxAttempts: 2.5 }, 'maxAttempts'],
    ['a negative shutdownTimeout', { shutdownTimeout: -1 }, 'shutdownTimeout'],
    ['a maxIdleWait below 100 ms', { maxIdleWait: 99 }, 'maxIdleWait'],
    ['a backoff that is not an object', { backoff: 'fast' }, 'backoff'],
    ['a null backoff', { backoff: null }, 'backoff'],
    ['a backoff jitter above 1', { backoff: { jitter: 1.1 } }, 'backoff.jitter'],
    ['a backoff maxDelay given as a string', { backoff: { maxDelay: '1s' } }, 'backoff.maxDelay'],
  ])('refuses %s, naming the option and where it was given', (_label, options, option) => {
    expect(refusal(options).option).toBe(option);
    expect(refusal(options).message).toContain(`(in ${where}).`);
  });

  it('refuses options that are not an object, naming where they were given', () => {
    expect(refusal(5)).toMatchObject({
      option: 'options',
      message: `Invalid option \`options\`: consumer options must be an object (in ${where}).`,
    });
  });

  it('says what was given and what to use', () => {
    expect(refusal({ concurrency: '4' }).message).toBe(
      `Invalid option \`concurrency\`: got the string "4"; use a whole number from 1 to 10000 (in ${where}).`,
    );
    expect(refusal({ backoff: 'fast' }).message).toBe(`Invalid option \`backoff\`: must be an object (in ${where}).`);
  });
});
