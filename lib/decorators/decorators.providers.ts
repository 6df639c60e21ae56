import type { Provider } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { DecoratorLockRunner } from './decorator-lock-runner.js';
import { RequestLockInterceptor } from './request-lock.interceptor.js';

/**
 * What the decorators run on: the runner of `@WithLock` / `@WithRequestLock` sections, and the global
 * interceptor that takes `@WithRequestLock` locks and answers lock errors over HTTP (409, 503).
 */
export const decoratorProviders: Provider[] = [DecoratorLockRunner, { provide: APP_INTERCEPTOR, useClass: RequestLockInterceptor }];
