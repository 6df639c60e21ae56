import type { Provider } from '@nestjs/common';
import { LockInspector } from './lock-inspector.js';
import { LockService } from './lock.service.js';
import { RedlockMasters } from './redlock/redlock-masters.js';

/** The lock engine: the service, its Redlock masters (idle unless `redlock` is set) and its read side. */
export const lockProviders: Provider[] = [RedlockMasters, LockService, LockInspector];
