import {
  InvalidOptionsError,
  LockAcquireTimeoutError,
  LockContext,
  type LockService,
  UnresolvedLockKeyError,
  WithLock,
} from '../../lib/index.js';
import { InvalidLockKeyTemplateError } from '../../lib/core/errors/invalid-lock-key-template.error.js';
import { LockServiceUnavailableError } from '../../lib/core/errors/lock-service-unavailable.error.js';
import { CUSTOM_METADATA, OrdersService, ownersKey, useOrdersApp } from '../fixtures/with-lock-app.js';
import { deferred, sleep } from '../support/timing.js';
import { PaymentsWithoutLockModule } from '../fixtures/payments-without-lock-module.js';
import { compileErrorBesideLockModule } from '../support/module-startup.js';

describe('@WithLock on a provider', () => {
  const t = useOrdersApp();

  it('holds the lock on the key built from the first argument while the method runs', async () => {
    let lockedInside: boolean | undefined;
    const result = await t.orders.byId('1', async () => {
      lockedInside = await t.locks.isLocked('order:1');
    });
    expect(result).toBe('paid 1');
    expect(lockedInside).toBe(true);
    expect(await t.locks.isLocked('order:1')).toBe(false);
  });

  it('reads a property path of an argument', async () => {
    await t.orders.byPath({ id: 'o1', customer: { id: 'c7' } });
    expect(t.orders.seen[0].context?.key).toBe('customer:c7');
  });

  it('takes every key of an array of templates, and releases them all', async () => {
    let locked: boolean[] = [];
    await t.orders.transfer('a', 'b', async () => {
      locked = [await t.locks.isLocked('acct:a'), await t.locks.isLocked('acct:b')];
    });
    expect(locked).toEqual([true, true]);
    expect(t.orders.seen[0].context?.key).toBe('acct:a,acct:b');
    expect([await t.locks.isLocked('acct:a'), await t.locks.isLocked('acct:b')]).toEqual([false, false]);
  });

  it('takes the keys a key function returns', async () => {
    await expect(t.orders.byFunction(['x', 'y'])).resolves.toBe(2);
    expect(t.orders.seen[0].context?.key).toBe('sku:x,sku:y');
  });

  it('runs concurrent calls on one key one after the other', async () => {
    const events: string[] = [];
    const holdA = deferred();
    const aInside = deferred();
    const a = t.orders.byId('serial', async () => {
      events.push('A in');
      aInside.resolve();
      await holdA.promise;
      events.push('A out');
    });
    await aInside.promise;
    const b = t.orders.byId('serial', async () => {
      events.push('B in');
    });
    // B cannot get in while A holds the lock, however long this takes.
    await sleep(100);
    expect(events).toEqual(['A in']);
    holdA.resolve();
    await Promise.all([a, b]);
    expect(events).toEqual(['A in', 'A out', 'B in']);
  });

  it('lets calls on different keys run at the same time', async () => {
    const holdA = deferred();
    const aInside = deferred();
    const a = t.orders.byId('p', async () => {
      aInside.resolve();
      await holdA.promise;
    });
    await aInside.promise;
    // Completes while A still holds order:p (it would time out if the keys were confused).
    await expect(t.orders.byId('q')).resolves.toBe('paid q');
    holdA.resolve();
    await a;
  });

  it('runs a sync method under the lock and resolves its result', async () => {
    const result = t.orders.syncDouble(21);
    expect(result).toBeInstanceOf(Promise);
    await expect(result).resolves.toBe(42);
    expect(t.orders.seen[0].context?.key).toBe('sync:21');
    const error = new Error('sync failure');
    await expect(t.orders.syncThrow(1, error)).rejects.toBe(error);
    expect(await t.locks.isLocked('sync:1')).toBe(false);
  });

  it("passes the method's own errors through untouched and releases the lock", async () => {
    const error = new TypeError('boom');
    await expect(t.orders.fail('e1', error)).rejects.toBe(error);
    await expect(t.orders.fail('e2', 'a string')).rejects.toBe('a string');
    expect(await t.locks.isLocked('order:e1')).toBe(false);
    expect(await t.locks.isLocked('order:e2')).toBe(false);
  });

  it("keeps the method's name, `this` and the metadata of decorators above and below it", async () => {
    expect(t.orders.withMetadata.name).toBe('withMetadata');
    expect(Reflect.getMetadata(CUSTOM_METADATA, OrdersService.prototype.withMetadata)).toBe('above');
    expect(Reflect.getMetadata(`${CUSTOM_METADATA}:below`, OrdersService.prototype.withMetadata)).toBe('below');
    await expect(t.orders.withMetadata('m')).resolves.toBe('OrdersService:m');
  });

  it('passes leaseTime to the lock (a fixed lease instead of the renewed default)', async () => {
    let pttl = -1;
    await t.orders.withLease('l1', async () => {
      pttl = await t.redis.pttl(ownersKey(t.keyPrefix, 'lease:l1'));
    });
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(5_000);
  });

  it('takes a fair (FIFO) lock with fair: true', async () => {
    const events: string[] = [];
    const holdA = deferred();
    const aInside = deferred();
    const a = t.orders.fairly('f', async () => {
      events.push('A');
      aInside.resolve();
      await holdA.promise;
    });
    await aInside.promise;
    const b = t.orders.fairly('f', async () => {
      events.push('B');
    });
    holdA.resolve();
    const [contextA, contextB] = await Promise.all([a, b]);
    expect(events).toEqual(['A', 'B']);
    expect(contextA?.key).toBe('fair:f');
    expect(BigInt(contextB!.fencingToken)).toBeGreaterThan(BigInt(contextA!.fencingToken));
    expect(await t.locks.isLocked('fair:f')).toBe(false);
  });

  describe('when the lock is held by someone else', () => {
    let holder: Awaited<ReturnType<LockService['acquire']>>;
    beforeEach(async () => {
      holder = await t.locks.acquire('busy:1');
    });
    afterEach(() => holder.release());

    it('throws LockAcquireTimeoutError by default, without running the method', async () => {
      const error = await t.orders.failFast('1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquireTimeoutError);
      expect((error as LockAcquireTimeoutError).key).toBe('busy:1');
      await expect(t.orders.waitBriefly('1')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    });

    it("resolves undefined with onLocked: 'skip'", async () => {
      await expect(t.orders.skipWhenBusy('1')).resolves.toBeUndefined();
    });

    it('resolves what an onLocked function returns, given the key, arguments and error', async () => {
      await expect(t.orders.fallbackWhenBusy('1')).resolves.toEqual({
        fallback: true,
        key: 'busy:1',
        args: ['1'],
        code: 'LOCK_ACQUIRE_TIMEOUT',
      });
    });

    it('takes the lock once it is free again', async () => {
      await holder.release();
      await expect(t.orders.failFast('1')).resolves.toBe('1');
    });
  });

  describe('a key that cannot be built at call time', () => {
    it('rejects with UnresolvedLockKeyError naming the method, and does not run it', async () => {
      const missing = await t.orders.byId(undefined as unknown as string).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(UnresolvedLockKeyError);
      expect((missing as Error).message).toContain('OrdersService.byId()');
      expect((missing as Error).message).toContain('<0> in "order:<0>" is undefined');
      await expect(t.orders.byId('')).rejects.toThrow('is an empty string');
      await expect(t.orders.byPath({ id: 'x', customer: null })).rejects.toThrow('cannot be read: argument 0.customer is null');
      await expect(t.orders.byPath({ id: 'x', customer: {} })).rejects.toThrow(UnresolvedLockKeyError);
      await expect(t.orders.byFunction([])).rejects.toThrow('the key function returned an empty array');
      await expect(t.orders.byId({ id: 1 } as unknown as string)).rejects.toThrow('point the placeholder at a string');
      expect(t.orders.seen).toEqual([]);
    });
  });

  it('needs an instance created by Nest', async () => {
    await expect(new OrdersService().byId('x')).rejects.toBeInstanceOf(LockServiceUnavailableError);
    const detached = t.orders.byId;
    await expect(detached('x')).rejects.toBeInstanceOf(LockServiceUnavailableError);
  });
});

describe('LockContext.current()', () => {
  const t = useOrdersApp();

  it('is undefined outside a locked call', () => {
    expect(LockContext.current()).toBeUndefined();
  });

  it('gives the key, the fencing token and the lease signal inside a locked call', async () => {
    let fence: string | null = null;
    await t.orders.byId('ctx', async () => {
      fence = await t.redis.get(`${ownersKey(t.keyPrefix, 'order:ctx')}:fence`);
    });
    const context = t.orders.seen[0].context!;
    expect(context.key).toBe('order:ctx');
    expect(context.fencingToken).toBe(fence);
    expect(context.signal).toBeInstanceOf(AbortSignal);
    expect(context.signal.aborted).toBe(false);
  });

  it('gives a larger fencing token to each new hold of a key', async () => {
    await t.orders.byId('fence');
    await t.orders.byId('fence');
    const [first, second] = t.orders.seen.map((s) => BigInt(s.context!.fencingToken));
    expect(second).toBeGreaterThan(first);
  });

  it('follows into deeper async code', async () => {
    let deep: string | undefined;
    await t.orders.byId('deep', async () => {
      await sleep(5);
      await Promise.resolve().then(() => {
        deep = LockContext.current()?.key;
      });
    });
    expect(deep).toBe('order:deep');
  });

  it('a nested call on the same key runs inside the same hold (no second acquire)', async () => {
    let owners: Record<string, string> = {};
    await t.orders.outer('n', async () => {
      owners = await t.redis.hgetall(ownersKey(t.keyPrefix, 'order:n'));
    });
    expect(t.orders.seen.map((s) => s.method)).toEqual(['outer', 'byId', 'outer-after']);
    const tokens = new Set(t.orders.seen.map((s) => s.context!.fencingToken));
    expect(tokens.size).toBe(1);
    // One owner, held once: its count field and the field of its one hold ('<owner>/<n>').
    expect(Object.values(owners)).toEqual(['1', '1']);
    expect(Object.keys(owners).filter((field) => field.includes('/'))).toHaveLength(1);
    expect(await t.locks.isLocked('order:n')).toBe(false);
  });

  it('a nested call on another key sees its own lock, and the outer one again after it returns', async () => {
    await t.orders.outerOther('a', 'b');
    expect(t.orders.seen.map((s) => [s.method, s.context?.key])).toEqual([
      ['byId', 'order:b'],
      ['outerOther-after', 'order:a'],
    ]);
  });

  it('lets LockService calls on the held key inside the method re-enter', async () => {
    let reentered = false;
    await t.orders.byId('re', async () => {
      const again = await t.locks.tryAcquire('order:re');
      reentered = again !== null;
      await again?.release();
      // Still held by the method after the inner release.
      expect(await t.locks.isLocked('order:re')).toBe(true);
    });
    expect(reentered).toBe(true);
    expect(await t.locks.isLocked('order:re')).toBe(false);
  });
});

describe("@WithLock with mode 'read' / 'write'", () => {
  const t = useOrdersApp();

  it('lets readers share the lock and keeps writers out while a reader holds it', async () => {
    const hold = deferred();
    const inside = deferred();
    const reader = t.orders.read('doc', async () => {
      inside.resolve();
      await hold.promise;
    });
    await inside.promise;
    await expect(t.orders.read('doc')).resolves.toMatchObject({ key: 'rw:doc' });
    await expect(t.orders.write('doc')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    hold.resolve();
    await reader;
    await expect(t.orders.write('doc')).resolves.toMatchObject({ key: 'rw:doc' });
  });

  it('keeps readers out while a writer holds the lock', async () => {
    const hold = deferred();
    const inside = deferred();
    const writer = t.orders.write('doc2', async () => {
      inside.resolve();
      await hold.promise;
    });
    await inside.promise;
    await expect(t.orders.read('doc2')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    hold.resolve();
    await writer;
  });

  it('runs a read section inside a write section of the same key', async () => {
    await expect(t.orders.writeThenRead('doc3')).resolves.toMatchObject({ key: 'rw:doc3' });
  });
});

describe('@WithLock checks its declaration before the application starts', () => {
  const define = (fn: () => unknown) => () => fn();

  it('rejects an argument index the method does not declare, naming the class and method', () => {
    let error: unknown;
    try {
      class Payments {
        @WithLock('order:<2>')
        async pay(orderId: string, amount: number) {}
      }
      void Payments;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidLockKeyTemplateError);
    expect((error as Error).message).toBe(
      'Invalid lock key template "order:<2>" in @WithLock on Payments.pay(): placeholder <2> reads argument 2, ' +
        'but the method declares 2 parameters (valid indexes are 0 to 1).',
    );
  });

  it('rejects a property path into a parameter declared as a primitive', () => {
    expect(
      define(() => {
        class Payments {
          @WithLock('order:<0.id>')
          async pay(orderId: string) {}
        }
        return Payments;
      }),
    ).toThrow(/Payments\.pay\(\).*argument 0, which is declared as a string; use <0>/);
  });

  it.each([
    ['order:<0', 'is not closed'],
    ['order:<id>', 'must start with an argument index'],
    ['order:<>', 'is empty'],
    ['order:<0..id>', 'empty path segment'],
    ['order:<0.__proto__>', 'may not read "__proto__"'],
    ['order:<0.a b>', 'has the segment "a b"'],
    ['', 'must not be empty'],
  ])('rejects the malformed template %j', (template, problem) => {
    expect(
      define(() => {
        class Payments {
          @WithLock(template)
          async pay(order: object) {}
        }
        return Payments;
      }),
    ).toThrow(problem);
  });

  it('rejects an empty array of templates and a key source of the wrong type', () => {
    const declare = (key: unknown) => () => {
      class Payments {
        @WithLock(key as string)
        async pay(order: object) {}
      }
      return Payments;
    };
    expect(declare([])).toThrow(InvalidLockKeyTemplateError);
    expect(declare(42)).toThrow('expected a template string, an array of templates, or a function');
  });

  it('accepts rest parameters, defaults, escaped brackets and deep paths', () => {
    expect(
      define(() => {
        class Payments {
          @WithLock('batch:<3>')
          async many(...ids: string[]) {}

          @WithLock('x:<1>')
          async withDefault(a: string, b = 'default') {}

          @WithLock('\\<literal\\>:<0.items.0.sku>')
          async deep(order: { items: Array<{ sku: string }> }) {}
        }
        return Payments;
      }),
    ).not.toThrow();
  });

  it('rejects invalid options and static methods', () => {
    const declare = (options: object) => () => {
      class Payments {
        @WithLock('order:<0>', options)
        async pay(orderId: string) {}
      }
      return Payments;
    };
    expect(declare({ waitTimeout: -1 })).toThrow(InvalidOptionsError);
    expect(declare({ waitTimeout: -1 })).toThrow('(in @WithLock on Payments.pay())');
    expect(declare({ leaseTime: 'long' })).toThrow(InvalidOptionsError);
    expect(declare({ mode: 'shared' })).toThrow("use 'exclusive', 'read' or 'write'");
    expect(declare({ onLocked: 'ignore' })).toThrow(InvalidOptionsError);
    expect(declare({ timeout: 5 })).toThrow('unknown option');
    expect(declare({ mode: 'read', fair: true })).toThrow('fair hand-off applies to exclusive locks');
    expect(
      define(() => {
        class Jobs {
          @WithLock('job')
          static async run() {}
        }
        return Jobs;
      }),
    ).toThrow('is static');
  });

  it('fails at bootstrap when the module of a @WithLock provider cannot see RedisLockModule', async () => {
    const error = await compileErrorBesideLockModule(PaymentsWithoutLockModule);
    expect(error.message).toMatch(/Payments.*RedisLockModule.*isGlobal: true/s);
  });
});
