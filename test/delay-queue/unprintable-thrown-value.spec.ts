import { JobDeadError } from '../../lib/index.js';
import { within } from '../support/timing.js';
import { rejectionOf } from '../support/thrown.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * A handler may throw anything. A value whose `message` getter and `toString` throw is recorded as a
 * failure at once, under a placeholder message, like any other thrown value: the job does not stay
 * claimed until its visibility timeout.
 */
describe('a thrown value that cannot be printed', () => {
  const instances = useDelayInstances('unprintable-thrown');

  it('is recorded as the failure at once (maxAttempts 1: the job dies well before its visibility timeout)', async () => {
    const [t] = await instances.start(1);
    const hostile = {
      get message(): string {
        throw new Error('getter');
      },
      toString(): string {
        throw new Error('toString');
      },
    };
    t.queue.consume(
      'hostile',
      () => {
        throw hostile;
      },
      { maxAttempts: 1, visibilityTimeout: 600_000 },
    );
    const id = await t.queue.schedule('hostile', 1);
    const error = await within(
      rejectionOf(() => t.queue.waitFor('hostile', id)),
      60_000,
      'the job to die',
    );
    expect(error).toBeInstanceOf(JobDeadError);
    const dead = await t.queue.get('hostile', id);
    expect(dead?.state).toBe('dead');
    expect(dead?.lastError).toBe('<a thrown value that cannot be printed>');
  });

  it('a revoked Proxy (whose prototype cannot be read: instanceof throws) is recorded as the failure at once', async () => {
    const [t] = await instances.start(1);
    t.queue.consume(
      'revoked',
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        throw proxy;
      },
      { maxAttempts: 1, visibilityTimeout: 600_000 },
    );
    const id = await t.queue.schedule('revoked', 1);
    const error = await within(
      rejectionOf(() => t.queue.waitFor('revoked', id)),
      60_000,
      'the job to die',
    );
    expect(error).toBeInstanceOf(JobDeadError);
    expect((await t.queue.get('revoked', id))?.lastError).toBe('<a thrown value that cannot be printed>');
  });
});
