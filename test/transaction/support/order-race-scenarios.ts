import type { LockService } from '../../../lib/index.js';
import {
  placeTwiceInOneTransaction,
  raceTwoWorkers,
  rollbackThenRetry,
  type OrderWorkers,
  type OrderWorkflow,
} from '../../fixtures/tx-race.js';
import { uniquePrefix } from '../../support/test-app.js';

/**
 * What every transaction integration promises for a lock released inside a transaction: held until
 * COMMIT (two racing workers, then many), and released after ROLLBACK. `workers` is read when a test runs.
 */
export function itKeepsLocksUntilTheTransactionEnds(workers: () => OrderWorkers, { concurrentOrders }: { concurrentOrders: number }): void {
  it('keeps the lock until COMMIT, so the second worker sees the committed row', async () => {
    const outcome = await raceTwoWorkers(workers(), uniquePrefix('order'));
    expect(outcome).toEqual({ inserted: [true, false], rows: 1, heldUntilCommit: true });
  });

  it('keeps that ordering over many concurrent workers', async () => {
    const each = workers();
    const refs = Array.from({ length: concurrentOrders }, () => uniquePrefix('order'));
    const results = await Promise.all(refs.flatMap((ref) => [1, 2, 3].map(() => each.placeOrder(ref))));
    expect(results.filter(Boolean)).toHaveLength(refs.length);
    for (const ref of refs) expect(await each.countOrders(ref)).toBe(1);
  });

  it('releases the lock after ROLLBACK, and the next worker inserts', async () => {
    const outcome = await rollbackThenRetry(workers(), uniquePrefix('order'));
    expect(outcome).toEqual({
      heldUntilRollback: true,
      lockedAfterRollback: false,
      error: 'declined',
      retried: true,
      rows: 1,
    });
  });
}

/** How a `@Transactional()` library spells the two propagations the scenarios use (for the test titles). */
export interface PropagationNames {
  /** What runs the locked insert in a savepoint of the outer transaction. */
  savepoint: string;
  /** What runs the locked insert outside the surrounding transaction. */
  notSupported: string;
}

/**
 * The same promises for a `@Transactional()` library's app (its OrderWorkflow), plus re-entry inside
 * one transaction, savepoints, suspended transactions and code outside any transaction.
 */
export function itReleasesLocksWithTheTransactionalWorkflow(
  app: () => { workflow: OrderWorkflow; locks: LockService; workers: OrderWorkers },
  propagation: PropagationNames,
): void {
  itKeepsLocksUntilTheTransactionEnds(() => app().workers, { concurrentOrders: 3 });

  it('runs two locked sections on one key in one transaction without waiting for itself, holding it until COMMIT', async () => {
    const { workflow, locks } = app();
    const outcome = await placeTwiceInOneTransaction(
      (ref, hooks) => workflow.placeOrderTwice(ref, hooks),
      (ref) => locks.isLocked(`order:${ref}`),
      uniquePrefix('order'),
    );
    expect(outcome).toEqual({ inserted: [true, false], heldBeforeCommit: true, heldAfterCommit: false });
  });

  it(`holds a lock released in a savepoint (${propagation.savepoint}) until the outer transaction commits`, async () => {
    const { workflow, locks } = app();
    const ref = uniquePrefix('order');
    let heldAfterSavepoint = false;
    await workflow.placeOrderInSavepoint(ref, {
      beforeCommit: async () => {
        heldAfterSavepoint = await locks.isLocked(`order:${ref}`);
      },
    });
    expect(heldAfterSavepoint).toBe(true);
    expect(await locks.isLocked(`order:${ref}`)).toBe(false);
  });

  it(`releases at once when the locked code runs outside the transaction (${propagation.notSupported})`, async () => {
    const ref = uniquePrefix('order');
    await expect(app().workflow.insertOutsideTransaction(ref)).resolves.toEqual({ lockedAfterInsert: false });
  });

  it('releases at once outside any transaction', async () => {
    const { locks } = app();
    const ref = uniquePrefix('order');
    let lockedInside = false;
    await locks.using(`order:${ref}`, async () => {
      lockedInside = await locks.isLocked(`order:${ref}`);
    });
    expect(lockedInside).toBe(true);
    expect(await locks.isLocked(`order:${ref}`)).toBe(false);
  });
}
