/**
 * `nestjs-redis-lock/transaction/nestjs-cls`: a lock released inside a `@nestjs-cls/transactional`
 * transaction is released only after the transaction ends. The "database" is a journal small enough
 * to live here (writes kept aside, applied on commit), through the package's public adapter interface,
 * so the check needs no database server.
 */
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClsPluginTransactional, Transactional, TransactionHost, type TransactionalAdapter } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { LockService, RedisLockModule } from 'nestjs-redis-lock';
import { ClsTransactionSynchronizer } from 'nestjs-redis-lock/transaction/nestjs-cls';
import type { ExtraCheck } from './app-flavor.js';
import { assert, assertEqual } from './check-list.js';

interface Journal {
  readonly committed: string[];
}

interface JournalTransaction {
  readonly writes: string[];
}

type JournalOptions = Record<string, never>;

const JOURNAL: Journal = { committed: [] };

class JournalAdapter implements TransactionalAdapter<Journal, JournalTransaction, JournalOptions> {
  constructor(readonly connection: Journal) {}

  optionsFactory = (journal: Journal) => ({
    wrapWithTransaction: async (
      _options: JournalOptions,
      fn: (...args: unknown[]) => Promise<unknown>,
      setTx: (tx?: JournalTransaction) => void,
    ) => {
      const tx: JournalTransaction = { writes: [] };
      setTx(tx);
      const result = await fn();
      journal.committed.push(...tx.writes);
      return result;
    },
    getFallbackInstance: (): JournalTransaction => ({ writes: journal.committed }),
  });
}

@Injectable()
class ClsLedger {
  constructor(
    private readonly locks: LockService,
    private readonly txHost: TransactionHost<JournalAdapter>,
  ) {}

  /** Writes under a lock and releases it before the transaction commits; says whether it was still held. */
  @Transactional()
  async write(key: string, entry: string): Promise<{ lockedAfterRelease: boolean; committedInside: number }> {
    const handle = await this.locks.acquire(key);
    this.txHost.tx.writes.push(entry);
    await handle.release();
    return { lockedAfterRelease: await this.locks.isLocked(key), committedInside: JOURNAL.committed.length };
  }
}

export const nestjsClsTransactionCheck: ExtraCheck = {
  id: 'cls',
  name: 'nestjs-redis-lock/transaction/nestjs-cls: release waits for the commit',
  async run(redisUrl, keyPrefix) {
    const transactions = new ClsTransactionSynchronizer();

    @Module({
      imports: [
        ClsModule.forRoot({
          global: true,
          plugins: [new ClsPluginTransactional({ adapter: transactions.wrap(new JournalAdapter(JOURNAL)) })],
        }),
        RedisLockModule.forRoot({ redis: redisUrl, keyPrefix, transactions, isGlobal: true }),
      ],
      providers: [ClsLedger],
    })
    class ClsCompatModule {}

    const context = await NestFactory.createApplicationContext(ClsCompatModule, { logger: ['error', 'warn'], abortOnError: false });
    try {
      const locks = context.get(LockService);
      const key = 'compat:cls';
      const outcome = await context.get(ClsLedger).write(key, 'entry-1');
      assert(outcome.lockedAfterRelease, 'the lock was released inside the transaction, before its commit');
      assertEqual(outcome.committedInside, 0, 'journal entries committed before the transaction ended');
      assertEqual(JOURNAL.committed.join(','), 'entry-1', 'journal after the commit');
      assert(!(await locks.isLocked(key)), 'the lock is still held after the transaction committed');
    } finally {
      await context.close();
    }
  },
};
