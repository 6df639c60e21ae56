/**
 * `nestjs-redis-lock/transaction/typeorm-transactional`: a lock released inside typeorm-transactional's
 * `@Transactional()` is released only after COMMIT (or ROLLBACK). The database is SQLite in memory
 * through TypeORM's `sqljs` driver (sql.js: WebAssembly, no server, no native build).
 */
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, RedisLockModule } from 'nestjs-redis-lock';
import { TypeOrmTransactionalSynchronizer } from 'nestjs-redis-lock/transaction/typeorm-transactional';
import { DataSource } from 'typeorm';
import { addTransactionalDataSource, initializeTransactionalContext, StorageDriver, Transactional } from 'typeorm-transactional';
import type { ExtraCheck } from './app-flavor.js';
import { assert, assertEqual } from './check-list.js';

class RollbackOnPurpose extends Error {}

export const typeormTransactionalCheck: ExtraCheck = {
  id: 'typeorm',
  name: 'nestjs-redis-lock/transaction/typeorm-transactional: release waits for COMMIT and ROLLBACK',
  async run(redisUrl, keyPrefix) {
    initializeTransactionalContext({ storageDriver: StorageDriver.ASYNC_LOCAL_STORAGE });
    const dataSource = addTransactionalDataSource(new DataSource({ type: 'sqljs' }));
    await dataSource.initialize();
    await dataSource.query('CREATE TABLE orders (ref TEXT PRIMARY KEY)');
    const count = async (ref: string): Promise<number> =>
      Number((await dataSource.query('SELECT COUNT(*) AS n FROM orders WHERE ref = ?', [ref]))[0].n);

    @Injectable()
    class OrderLedger {
      constructor(private readonly locks: LockService) {}

      /** Inserts under a lock, releases it before COMMIT, and reports whether it was still held. */
      @Transactional()
      async insert(ref: string, fail = false): Promise<boolean> {
        const handle = await this.locks.acquire(`compat:typeorm:${ref}`);
        await dataSource.query('INSERT INTO orders (ref) VALUES (?)', [ref]);
        await handle.release();
        const held = await this.locks.isLocked(`compat:typeorm:${ref}`);
        if (fail) throw new RollbackOnPurpose(String(held));
        return held;
      }
    }

    @Module({
      imports: [RedisLockModule.forRoot({ redis: redisUrl, keyPrefix, transactions: new TypeOrmTransactionalSynchronizer() })],
      providers: [OrderLedger],
    })
    class TypeOrmCompatModule {}

    const context = await NestFactory.createApplicationContext(TypeOrmCompatModule, { logger: ['error', 'warn'], abortOnError: false });
    try {
      const locks = context.get(LockService);
      const ledger = context.get(OrderLedger);

      assert(await ledger.insert('a'), 'the lock was released inside the transaction, before COMMIT');
      assert(!(await locks.isLocked('compat:typeorm:a')), 'the lock is still held after COMMIT');
      assertEqual(await count('a'), 1, 'rows of the committed order');

      let heldBeforeRollback: string | undefined;
      try {
        await ledger.insert('b', true);
      } catch (error) {
        if (!(error instanceof RollbackOnPurpose)) throw error;
        heldBeforeRollback = error.message;
      }
      assertEqual(heldBeforeRollback, 'true', 'lock held after release() inside the transaction that rolls back');
      assert(!(await locks.isLocked('compat:typeorm:b')), 'the lock is still held after ROLLBACK');
      assertEqual(await count('b'), 0, 'rows of the rolled-back order');
    } finally {
      await context.close();
      await dataSource.destroy();
    }
  },
};
