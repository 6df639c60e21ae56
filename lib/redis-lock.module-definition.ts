import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedisLockModuleOptions } from './core/options/redis-lock-module-options.interface.js';

/**
 * Generates `forRoot` / `forRootAsync` (useFactory + inject, useClass, useExisting) with an
 * `isGlobal` extra, instead of hand-written dynamic-module plumbing.
 */
export const {
  ConfigurableModuleClass: ConfigurableRedisLockModule,
  MODULE_OPTIONS_TOKEN: REDIS_LOCK_MODULE_OPTIONS,
  ASYNC_OPTIONS_TYPE: REDIS_LOCK_MODULE_ASYNC_OPTIONS,
  OPTIONS_TYPE: REDIS_LOCK_MODULE_FOR_ROOT_OPTIONS,
} = new ConfigurableModuleBuilder<RedisLockModuleOptions>({ moduleName: 'RedisLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedisLockOptions')
  .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
