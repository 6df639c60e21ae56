import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockContext, WithLock } from '../../lib/index.js';
import { createWithLockApp } from '../fixtures/with-lock-app.js';
import { deferred } from '../support/timing.js';

/** Two order operations whose key templates share a prefix, as an application would write them. */
@Injectable()
class OrderLines {
  readonly keys: string[] = [];

  @WithLock('order:<0>:<1>', { waitTimeout: 300 })
  async line(order: string, line: string, inside?: () => Promise<void>): Promise<void> {
    this.keys.push(LockContext.current()!.key);
    await inside?.();
  }

  @WithLock('order:<0>:refund', { waitTimeout: 300 })
  async refund(order: string | number, inside?: () => Promise<void>): Promise<void> {
    this.keys.push(LockContext.current()!.key);
    await inside?.();
  }

  @WithLock('order:<0>', { waitTimeout: 300 })
  async order(order: string, inside?: () => Promise<void>): Promise<void> {
    this.keys.push(LockContext.current()!.key);
    await inside?.();
  }
}

describe('@WithLock templates: distinct arguments never share a lock', () => {
  let app: TestingModule;
  let lines: OrderLines;
  beforeAll(async () => {
    ({ app } = await createWithLockApp([OrderLines]));
    lines = app.get(OrderLines);
  });
  afterAll(() => app.close());
  beforeEach(() => (lines.keys.length = 0));

  /** Runs `second` while `first` holds its lock; resolves to how `second` ended. */
  async function whileHeld(first: (inside: () => Promise<void>) => Promise<void>, second: () => Promise<void>): Promise<unknown> {
    const entered = deferred();
    const leave = deferred();
    const holding = first(async () => {
      entered.resolve();
      await leave.promise;
    });
    await entered.promise;
    const outcome = await second().then(
      () => 'ran',
      (error: unknown) => error,
    );
    leave.resolve();
    await holding;
    return outcome;
  }

  it("('1:2', '3') and ('1', '2:3') lock different keys", async () => {
    const outcome = await whileHeld(
      (inside) => lines.line('1:2', '3', inside),
      () => lines.line('1', '2:3'),
    );
    expect(outcome).toBe('ran');
    expect(lines.keys[0]).not.toBe(lines.keys[1]);
  });

  it("an order id '42:refund' does not take the refund lock of order 42", async () => {
    const outcome = await whileHeld(
      (inside) => lines.refund(42, inside),
      () => lines.order('42:refund'),
    );
    expect(outcome).toBe('ran');
    expect(lines.keys[0]).not.toBe(lines.keys[1]);
  });

  it('the same arguments still share one lock', async () => {
    const outcome = await whileHeld(
      (inside) => lines.line('1:2', '3', inside),
      () => lines.line('1:2', '3'),
    );
    expect(outcome).toBeInstanceOf(LockAcquireTimeoutError);
  });
});
