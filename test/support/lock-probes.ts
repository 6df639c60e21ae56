import type { LockHandle } from '../../lib/index.js';

/** Whether a try-acquire got the lock or permit; one it got is given back at once. */
export async function got(attempt: Promise<LockHandle | null>): Promise<boolean> {
  const handle = await attempt;
  await handle?.release();
  return handle !== null;
}
