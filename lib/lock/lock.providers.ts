import type { Provider } from '@nestjs/common';
import { LockHoldRegistry } from './lock-hold-registry.js';
import { LockInspector } from './lock-inspector.js';
import { LockObserver } from './lock-observer.js';
import { LockService } from './lock.service.js';
import { RedlockMasters } from './redlock/redlock-masters.js';

/**
 * The lock engine: the service with its hold registry and observer, its Redlock masters (idle
 * unless `redlock` is set) and its read side.
 */
export const lockProviders: Provider[] = [RedlockMasters, LockObserver, LockHoldRegistry, LockService, LockInspector];
