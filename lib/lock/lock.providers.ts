import type { Provider } from '@nestjs/common';
import { AbandonedHolds } from './abandoned-holds.js';
import { LockHoldRegistry } from './lock-hold-registry.js';
import { LockInspector } from './lock-inspector.js';
import { LockObserver } from './lock-observer.js';
import { LockSections } from './lock-sections.js';
import { LockService } from './lock.service.js';
import { RedlockMasters } from './redlock/redlock-masters.js';
import { TransactionHolds } from './transaction-holds.js';

/**
 * The lock engine: the service with its hold registry (and the holds kept for transactions or
 * abandoned) and observer, its Redlock masters (idle unless `redlock` is set), the decorators'
 * sections and its read side.
 */
export const lockProviders: Provider[] = [
  RedlockMasters,
  LockObserver,
  TransactionHolds,
  AbandonedHolds,
  LockHoldRegistry,
  LockService,
  LockSections,
  LockInspector,
];
