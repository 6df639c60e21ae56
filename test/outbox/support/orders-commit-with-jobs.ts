import type { DataSource } from 'typeorm';
import { holdsWithin, waitFor } from '../../support/timing.js';
import type { RecordedRun } from './outbox-harness.js';

/** An outbox behind a transaction adapter: orders placed in its transactions, each scheduling its expiry job. */
export interface OrdersThroughOutbox {
  /** Inserts order `ref` and schedules its job `order.expire` in one transaction; `fail`: throws 'payment declined' before COMMIT. */
  place(ref: string, fail?: boolean): Promise<string>;
  readonly dataSource: DataSource;
  /** The runs of `order.expire`, as they come. */
  readonly runs: readonly RecordedRun[];
  readonly ordersTable: string;
  readonly outboxTable: string;
}

/**
 * Places order `committed` and order `rolledBack` (whose transaction fails): the first's row and
 * job commit together (the job runs with its payload, its outbox row is then deleted), the second
 * leaves no order and no row to relay, so no second job ever runs.
 */
export async function expectOrderAndJobCommitTogether(orders: OrdersThroughOutbox, committed: string, rolledBack: string): Promise<void> {
  const { dataSource, runs } = orders;
  const id = await orders.place(committed);
  await expect(orders.place(rolledBack, true)).rejects.toThrow('payment declined');
  await waitFor(() => runs.length === 1 || undefined, 30_000, "the committed order's job");
  expect(runs[0]).toMatchObject({ id, payload: { ref: committed } });
  expect(await dataSource.query(`SELECT ref FROM ${orders.ordersTable}`)).toEqual([{ ref: committed }]);
  // The relay DELETEs a row after Redis answered its write: the job may run first. Wait for the DELETE, do not race it.
  const outboxRows = async () => (await dataSource.query(`SELECT count(*)::int AS n FROM ${orders.outboxTable}`))[0].n as number;
  await waitFor(async () => (await outboxRows()) === 0, 30_000, 'the relay to delete the relayed outbox row', { every: 50 });
  // The rolled-back order left no row to relay: no second run, ever.
  expect(await holdsWithin(() => runs.length > 1, 1_500)).toBe(false);
  expect(await outboxRows()).toBe(0);
}
