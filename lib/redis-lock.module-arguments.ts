import { InvalidOptionsError } from './core/errors/invalid-options.error.js';
import { keysOf, refuseUnknownKeys } from './core/options/known-option-keys.js';
import { MODULE_OPTION_KEYS } from './core/options/module-option-keys.js';
import type { ConfigurableModuleAsyncOptions } from '@nestjs/common';
import type { RedisLockModuleOptions } from './core/options/redis-lock-module-options.interface.js';

/** The argument of `RedisLockModule.forRootAsync` (Nest's `ConfigurableModuleAsyncOptions` and `isGlobal`). */
export type RedisLockModuleAsyncOptions = ConfigurableModuleAsyncOptions<RedisLockModuleOptions, 'createRedisLockOptions'> & {
  /** Whether every module sees `LockService`, `DelayQueueService` and the decorators' providers. Default false. */
  isGlobal?: boolean;
};

const ASYNC_OPTION_KEYS = keysOf<RedisLockModuleAsyncOptions>()([
  'imports',
  'useFactory',
  'inject',
  'useClass',
  'useExisting',
  'provideInjectionTokensFrom',
  'isGlobal',
]);

/**
 * Refuses a `forRootAsync` argument Nest would misread: an unknown key (a misspelt `isGlobal` leaves
 * the module silently not global, a misspelt `useFactory` or `inject` fails later with an error that
 * names neither), or none of `useFactory`, `useClass` and `useExisting`.
 *
 * @throws InvalidOptionsError naming the key
 */
export function checkForRootAsyncArgument(argument: unknown): void {
  const refuse = refuseIn('RedisLockModule.forRootAsync');
  if (argument === null || typeof argument !== 'object')
    return refuse('options', 'expected an object: { useFactory, inject?, imports?, isGlobal? }');
  refuseUnknownKeys(refuse, '', argument, ASYNC_OPTION_KEYS);
  const a = argument as RedisLockModuleAsyncOptions;
  if (a.useFactory === undefined && a.useClass === undefined && a.useExisting === undefined) {
    refuse('useFactory', 'missing; give one of useFactory, useClass or useExisting, which builds the module options');
  }
}

/** The keys of `forRoot`'s argument: the module options' own and `isGlobal`. */
const FOR_ROOT_KEYS: readonly string[] = [...MODULE_OPTION_KEYS.root, 'isGlobal'];

/**
 * Refuses an unknown top-level key of `forRoot`'s argument at the call, where `isGlobal` can be
 * suggested (the options' deeper levels and their values are checked at bootstrap).
 *
 * @throws InvalidOptionsError naming the key
 */
export function checkForRootArgument(argument: unknown): void {
  refuseUnknownKeys(refuseIn('RedisLockModule.forRoot'), '', argument, FOR_ROOT_KEYS);
}

function refuseIn(where: string) {
  return (option: string, problem: string): never => {
    throw new InvalidOptionsError(option, `${problem} (in ${where})`);
  };
}
