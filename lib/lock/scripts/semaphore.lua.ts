/**
 * Forwarding module, defines no script: the semaphore scripts moved to one file per operation.
 * Kept only while importers still name this path; once they import the operation files, delete it.
 */
export { acquirePermitScript } from './acquire-permit.lua.js';
export { releasePermitScript } from './release-permit.lua.js';
export { renewPermitsScript } from './renew-permits.lua.js';
