import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { LockContext, LockService, RedisLockModule, WithLock } from '../../lib/index.js';
import { startIndependentMasters, type IndependentMasters } from '../support/independent-masters.js';
import { uniquePrefix } from '../support/test-app.js';
import { sleep } from '../support/timing.js';

@Injectable()
class Ledger {
  static balance = 0;
  static tokens: bigint[] = [];

  @WithLock('ledger:<0>')
  async deposit(account: string): Promise<void> {
    Ledger.tokens.push(BigInt(LockContext.current()!.fencingToken));
    const read = Ledger.balance;
    await sleep(1);
    Ledger.balance = read + 1;
    void account;
  }
}

describe('Redlock: @WithLock', () => {
  let masters: IndependentMasters;
  let apps: TestingModule[];

  beforeAll(async () => {
    masters = await startIndependentMasters(3);
    const keyPrefix = uniquePrefix('rlw');
    apps = await Promise.all(
      [0, 1].map(async () => {
        const app = await Test.createTestingModule({
          imports: [RedisLockModule.forRoot({ keyPrefix, redlock: { clients: masters.urls } })],
          providers: [Ledger],
        }).compile();
        app.useLogger(false);
        return app.init();
      }),
    );
  });
  afterAll(async () => {
    await Promise.all((apps ?? []).map((app) => app.close()));
    await masters?.stop();
  });

  it('serialises a decorated method across two apps, with increasing fencing tokens', async () => {
    const ledgers = apps.map((app) => app.get(Ledger));
    await Promise.all(ledgers.flatMap((ledger) => Array.from({ length: 15 }, () => ledger.deposit('acct-1'))));
    expect(Ledger.balance).toBe(30);
    expect(Ledger.tokens.every((t, i) => i === 0 || t > Ledger.tokens[i - 1])).toBe(true);
    expect(await apps[0].get(LockService).isLocked('ledger:acct-1')).toBe(false);
  });
});
