import { Test } from '@nestjs/testing';
import { InvalidOptionsError, LockService, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { thrownBy } from '../support/thrown.js';
import { NeedsLocks, NeedsLocksModule } from '../fixtures/needs-locks.js';

const options = (): RedisLockModuleOptions => ({ redis: testRedisUrl(), keyPrefix: uniquePrefix() });

/** What `RedisLockModule.forRootAsync(argument)` throws at the call. */
function callError(argument: Record<string, unknown>): unknown {
  try {
    RedisLockModule.forRootAsync(argument as never);
    return undefined;
  } catch (error) {
    return error;
  }
}

describe('RedisLockModule.forRootAsync refuses an argument it would misread, at the call', () => {
  it.each([
    [{ useFactory: options, isglobal: true }, 'isglobal', 'isGlobal'],
    [{ useFactroy: options }, 'useFactroy', 'useFactory'],
    [{ useFactory: options, inejct: [] }, 'inejct', 'inject'],
    [{ useFactory: options, Imports: [] }, 'Imports', 'imports'],
  ])('forRootAsync refuses a misspelt key of its argument (case %#)', (argument, key, meant) => {
    const error = callError(argument);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe(key);
    expect((error as Error).message).toContain(`did you mean \`${meant}\`?`);
    expect((error as Error).message).toContain('RedisLockModule.forRootAsync');
  });

  it('refuses an argument with none of useFactory, useClass and useExisting', () => {
    const error = callError({ imports: [], isGlobal: true });
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(/useFactory, useClass or useExisting/);
  });

  it('forRoot({ isglobal: true }) is refused at the call, suggesting isGlobal', () => {
    const error = thrownBy(() => RedisLockModule.forRoot({ ...options(), isglobal: true } as never));
    expectInvalidOption(error, 'isglobal', 'did you mean `isGlobal`?', 'RedisLockModule.forRoot');
  });

  it('accepts every key of its argument, and isGlobal makes the module global', async () => {
    const app = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRootAsync({ isGlobal: true, imports: [], inject: [], provideInjectionTokensFrom: [], useFactory: options }),
        NeedsLocksModule,
      ],
    }).compile();
    try {
      await app.init();
      expect(app.get(NeedsLocks).locks).toBeInstanceOf(LockService);
    } finally {
      await app.close();
    }
  });
});
