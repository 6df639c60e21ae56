import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayQueueService, OnDelayed, RedisLockError, RedisLockModule } from '../../lib/index.js';
import { DuplicateDelayedHandlerError } from '../../lib/core/errors/duplicate-delayed-handler.error.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';

@Injectable()
class Handlers {
  readonly seen: unknown[] = [];

  @OnDelayed('twice.topic')
  handle(payload: unknown): void {
    this.seen.push(payload);
  }
}

describe('an application initialised twice', () => {
  it(
    'says the consumers are already started (not DuplicateDelayedHandlerError naming one method twice), ' +
      'and the first start keeps working',
    async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix('twice'), isGlobal: true })],
        providers: [Handlers],
      }).compile();
      await moduleRef.init();
      // The same container's hooks run again: a common slip in tests (init() on the testing module, then on an app made from it).
      const app = moduleRef.createNestApplication({ logger: false });
      let error: unknown;
      try {
        await app.init();
      } catch (caught) {
        error = caught;
      }
      try {
        expect(error).toBeInstanceOf(RedisLockError);
        expect(error).not.toBeInstanceOf(DuplicateDelayedHandlerError);
        expect((error as RedisLockError).code).toBe('DELAY_QUEUE_ALREADY_STARTED');
        expect((error as Error).message).toMatch(/already started/);
        expect((error as Error).message).toMatch(/init\(\)/);
        // The consumers of the first start still run jobs.
        await moduleRef.get(DelayQueueService).schedule('twice.topic', { n: 1 });
        await waitFor(() => moduleRef.get(Handlers).seen.length === 1, 10_000, 'the job to run');
      } finally {
        await moduleRef.close();
      }
    },
  );
});
