/** Stops the Redis and Redis Cluster that global-setup started (ones given by REDIS_URL / REDIS_CLUSTER_NODES are left alone). */
export default async function globalTeardown(): Promise<void> {
  await Promise.all([globalThis.__TEST_REDIS__?.stop(), globalThis.__TEST_REDIS_CLUSTER__?.stop()]);
}
