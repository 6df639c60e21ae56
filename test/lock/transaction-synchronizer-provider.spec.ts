import type { TestingModule } from '@nestjs/testing';
import {
  AsyncLocalUnitOfWork,
  LockService,
  runInTransaction,
  TransactionSynchronizer,
  type TransactionSynchronization,
} from '../../lib/index.js';
import { closeRedisLockTestingModule, createRedisLockTestingModule } from '../../lib/testing/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';

/** A unit of work of its own (not the module's default one) that counts the synchronizations registered on it. */
class RecordingUnitOfWork extends AsyncLocalUnitOfWork {
  registered = 0;

  override register(synchronization: TransactionSynchronization): void {
    this.registered++;
    super.register(synchronization);
  }
}

/**
 * `TransactionSynchronizer` is a provider of the module: overriding it (Nest's `overrideProvider`)
 * changes which transactions lock releases wait for, exactly as it does for scheduled jobs.
 */
describe('LockService and an overridden TransactionSynchronizer provider', () => {
  const synchronizer = new RecordingUnitOfWork();
  let app: TestingModule;
  let locks: LockService;

  beforeAll(async () => {
    app = await createRedisLockTestingModule({ redis: testRedisUrl(), redisLock: { keyPrefix: uniquePrefix('tx-provider') } })
      .overrideProvider(TransactionSynchronizer)
      .useValue(synchronizer)
      .compile();
    await app.init();
    locks = app.get(LockService);
  });
  afterAll(() => closeRedisLockTestingModule(app, { removeKeys: true }));

  it('injects the overriding synchronizer', () => {
    expect(app.get(TransactionSynchronizer)).toBe(synchronizer);
  });

  it('defers a release inside the overriding synchronizer’s transaction until that transaction ends', async () => {
    const before = synchronizer.registered;
    await synchronizer.run(async () => {
      const lock = await locks.acquire('tx-provider:deferred', { waitTimeout: 2_000 });
      await lock.release();
      expect(synchronizer.registered).toBe(before + 1);
      // Still held: the release waits for the end of the transaction.
      expect(await locks.isLocked('tx-provider:deferred')).toBe(true);
    });
    expect(await locks.isLocked('tx-provider:deferred')).toBe(false);
  });

  it('releases at once inside the default unit of work, which the override replaced', async () => {
    const before = synchronizer.registered;
    await runInTransaction(async () => {
      const lock = await locks.acquire('tx-provider:default', { waitTimeout: 2_000 });
      await lock.release();
      expect(await locks.isLocked('tx-provider:default')).toBe(false);
    });
    expect(synchronizer.registered).toBe(before);
  });

  it('re-enters, inside the overriding synchronizer’s transaction, a hold whose release waits for it', async () => {
    await synchronizer.run(async () => {
      const first = await locks.acquire('tx-provider:kept', { waitTimeout: 2_000 });
      await first.release();
      // Taken again without waiting for its own deferred release: the same hold, the same fencing token.
      const again = await locks.tryAcquire('tx-provider:kept');
      expect(again?.fencingToken).toBe(first.fencingToken);
      await again!.release();
    });
    expect(await locks.isLocked('tx-provider:kept')).toBe(false);
  });
});
