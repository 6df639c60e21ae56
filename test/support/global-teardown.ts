/** Stops the Redis that global-setup started (one given by REDIS_URL is left alone). */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__TEST_REDIS__?.stop();
}
