import type { RedisScript } from '../../core/redis/redis-script.js';
import type { LockKindDefinition } from '../protocols/lock-kind.js';
import { FAIR } from './fair/fair.kind.js';
import { MUTEX } from './mutex/mutex.kind.js';
import { READ_WRITE } from './read-write/read-write.kind.js';
import { SEMAPHORE } from './semaphore/semaphore.kind.js';

/**
 * Every lock kind, one entry each (see LockKindDefinition): what preloads their scripts, what the
 * inspector scans and what Redlock mode refuses all read this list. A new kind is a folder of its
 * own beside these and one line here.
 */
export const LOCK_KINDS: readonly LockKindDefinition<never>[] = [MUTEX, FAIR, READ_WRITE, SEMAPHORE];

/** Every script of the lock engine (each kind's), for preloading at bootstrap. */
export const ALL_LOCK_SCRIPTS: readonly RedisScript[] = LOCK_KINDS.flatMap((kind) => kind.scripts);
