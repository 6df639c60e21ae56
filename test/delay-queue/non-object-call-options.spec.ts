import { InvalidOptionsError } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { outcomeWithin } from '../support/timing.js';
import { rejectionOf } from '../support/thrown.js';

/**
 * The options argument of waitFor() and obliterate() is an object or nothing: a bare value (the
 * timeout passed as a number, a natural slip from JavaScript or through `any`) is refused with
 * InvalidOptionsError and nothing is done, as list() and clean() refuse it; it is never read as no
 * options (a wait with no timeout, an obliterate not forced).
 */
describe('a non-object options argument', () => {
  const instances = useDelayInstances('rev-options');

  it('waitFor(topic, id, 200) is refused, not a wait without a timeout', async () => {
    const [t] = await instances.start(1);
    const id = await t.queue.schedule('later', 1, { delay: 3_600_000 });
    const waiting = rejectionOf(() => t.queue.waitFor('later', id, 200 as never));
    // Observed: still pending long after the 200 ms the caller meant (it would wait for an hour).
    expect(await outcomeWithin(waiting, 5_000)).toBeInstanceOf(InvalidOptionsError);
  });

  it('obliterate(topic, true) is refused rather than run as not forced', async () => {
    const [t] = await instances.start(1);
    await t.queue.schedule('gone', 1, { delay: 3_600_000 });
    expect(await rejectionOf(() => t.queue.obliterate('gone', true as never))).toBeInstanceOf(InvalidOptionsError);
    // Nothing removed by a refused call.
    expect((await t.queue.stats('gone')).scheduled).toBe(1);
  });
});
