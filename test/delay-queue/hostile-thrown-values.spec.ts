import { Injectable } from '@nestjs/common';
import { JobDeadError, JobRateLimitedError, OnJobEvent, RedisLockEvents, type JobFailedEvent } from '../../lib/index.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { rejectionOf } from '../support/thrown.js';
import { within } from '../support/timing.js';
import { UnhandledRejections } from '../support/unhandled-rejections.js';
import { createDelayApp } from './support/delay-test-app.js';
import { useDelayInstances } from './support/delay-instances.js';

/** A value whose prototype and properties cannot be read: `instanceof`, `.message` and `.stack` throw on it. */
function revokedProxy(): unknown {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/**
 * A handler may throw anything, and listeners may re-throw it: each failure below is recorded at once
 * (maxAttempts 1: the job dies long before its 10-minute visibility timeout), the consumer goes on,
 * and nothing is left unhandled (docs/delayed-jobs.md, Results: "A handler may throw anything").
 */
describe('hostile values thrown by handlers and listeners', () => {
  const instances = useDelayInstances('hostile-thrown');
  const HELD = { maxAttempts: 1, visibilityTimeout: 600_000 };

  it('a Proxy of a JobRateLimitedError whose get trap throws is recorded as an ordinary failure', async () => {
    const [t] = await instances.start(1);
    t.queue.consume(
      'rl-proxy',
      () => {
        throw new Proxy(new JobRateLimitedError(1_000), {
          get() {
            throw new Error('trap');
          },
        });
      },
      HELD,
    );
    const id = await t.queue.schedule('rl-proxy', 1);
    expect(
      await within(
        rejectionOf(() => t.queue.waitFor('rl-proxy', id)),
        30_000,
        'the job to die',
      ),
    ).toBeInstanceOf(JobDeadError);
    expect((await t.queue.get('rl-proxy', id))?.lastError).toBe('<a thrown value that cannot be printed>');
  });

  it('an error of 300,000 blank lines is recorded at once (the stack is cut in linear time)', async () => {
    const [t] = await instances.start(1);
    t.queue.consume(
      'blank-lines',
      () => {
        throw new Error('upstream said:' + '\n'.repeat(300_000) + 'end');
      },
      HELD,
    );
    const id = await t.queue.schedule('blank-lines', 1);
    // Quadratic before: about 75 s for 300,000 lines, the event loop blocked throughout.
    expect(
      await within(
        rejectionOf(() => t.queue.waitFor('blank-lines', id)),
        20_000,
        'the job to die',
      ),
    ).toBeInstanceOf(JobDeadError);
  });

  it('a job.failed listener that re-throws a revoked Proxy does not keep the failure from being recorded', async () => {
    const [t] = await instances.start(1);
    t.app.get(RedisLockEvents).on('job.failed', ({ error }) => {
      throw error;
    });
    const ran: number[] = [];
    t.queue.consume(
      'hostile-listener',
      (n: number) => {
        ran.push(n);
        if (n === 1) throw revokedProxy();
      },
      { ...HELD, concurrency: 1, keepCompleted: { count: 10 } }, // the second job's outcome is kept for its waitFor
    );
    const first = await t.queue.schedule('hostile-listener', 1);
    expect(
      await within(
        rejectionOf(() => t.queue.waitFor('hostile-listener', first)),
        30_000,
        'the job to die',
      ),
    ).toBeInstanceOf(JobDeadError);
    const second = await t.queue.schedule('hostile-listener', 2);
    await within(t.queue.waitFor('hostile-listener', second), 30_000, 'the next job to run');
    expect(ran).toEqual([1, 2]);
  });
});

@Injectable()
class RethrowingListener {
  @OnJobEvent('hostile-on-job-event', 'failed')
  async onFailed(event: JobFailedEvent): Promise<void> {
    throw event.error;
  }
}

describe('an async @OnJobEvent listener rejecting with a revoked Proxy', () => {
  it('is logged, and leaves no unhandled rejection', async () => {
    muteNestLogger('error');
    const unhandled = new UnhandledRejections();
    unhandled.start();
    const t = await createDelayApp({}, [RethrowingListener]);
    try {
      t.queue.consume(
        'hostile-on-job-event',
        () => {
          throw revokedProxy();
        },
        { maxAttempts: 1 },
      );
      const id = await t.queue.schedule('hostile-on-job-event', 1);
      expect(
        await within(
          rejectionOf(() => t.queue.waitFor('hostile-on-job-event', id)),
          30_000,
          'the job to die',
        ),
      ).toBeInstanceOf(JobDeadError);
    } finally {
      await t.close();
      unhandled.stop();
    }
    expect(unhandled.reasons).toHaveLength(0);
  });
});
