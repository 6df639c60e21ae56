/**
 * The lock kinds, one name each wherever a kind is named: the kinds list (`LOCK_KINDS`), spans
 * (`lock.kind`, where a read/write lock names its side), the inspector and errors.
 */
export type LockKindName = 'mutex' | 'fair' | 'read-write' | 'semaphore';
