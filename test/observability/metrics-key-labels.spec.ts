import { useMetricsApp } from './support/use-metrics-app.js';

/** docs/observability.md: "raw keys never become labels". */
describe('lock metrics label a key by its shape, never by the key', () => {
  const metrics = useMetricsApp('ml');

  it('a key whose id has no digits (account:a) is not a label value', async () => {
    const { locks } = metrics;
    for (const key of ['account:a', 'account:bob', 'user:alice@example.com:cart', 'tenant:acme:report:daily']) {
      await (await locks.acquire(key)).release();
    }
    const text = await metrics.registry.metrics();
    expect(text).not.toMatch(/account:a"|account:bob|alice|acme/);
    const acquisitions = (await metrics.registry.getSingleMetric('redis_lock_lock_acquisitions_total')!.get()).values;
    const byPattern = Object.fromEntries(acquisitions.map((v) => [v.labels.key_pattern, v.value]));
    expect(byPattern).toEqual({ 'account:*': 2, 'user:*': 1, 'tenant:*': 1 });
  });
});
