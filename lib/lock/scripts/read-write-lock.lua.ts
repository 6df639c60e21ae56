/**
 * Forwarding module, defines no script: the read/write lock scripts moved to one file per operation.
 * Kept only while importers still name this path; once they import the operation files, delete it.
 */
export { acquireReadLockScript } from './acquire-read-lock.lua.js';
export { acquireWriteLockScript } from './acquire-write-lock.lua.js';
export { leaveReadWriteWritersScript as leaveWritersScript } from './leave-read-write-writers.lua.js';
export { releaseReadWriteLockScript } from './release-read-write-lock.lua.js';
export { renewReadWriteLocksScript } from './renew-read-write-locks.lua.js';
