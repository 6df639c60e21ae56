import { useDelayInstances } from './support/delay-instances.js';

/**
 * The operation records of answered calls are deleted in the background (AnsweredRecords); an
 * application closed right after its calls answered sends those deletes before its connections
 * close, so none is left to expire.
 */
describe('operation records of answered calls at close', () => {
  const instances = useDelayInstances('op-records-close');

  it('leaves none behind when the app closes right after the calls answered', async () => {
    const [t] = await instances.start(1);
    const ids = await t.queue.scheduleMany(
      'opc',
      Array.from({ length: 50 }, (_, i) => ({ id: `j${i}`, payload: i, delay: 60_000 })),
    );
    await Promise.all(ids.map((id) => t.queue.reschedule('opc', id, { delay: 120_000 })));
    await Promise.all(ids.map((id) => t.queue.scheduleWithResult('opc', 1, { dedupe: { key: `k${id}`, ttl: 60_000, mode: 'debounce' } })));
    await t.close();
    expect(await instances.redis().keys(`${t.keyPrefix}*:op:*`)).toEqual([]);
  });
});
