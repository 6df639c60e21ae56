import { RedisConnectionError } from '../../lib/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { pauseTopicScript } from '../../lib/delay-queue/scripts/pause-topic.lua.js';
import { useDelayInstances } from './support/delay-instances.js';
import { useFaultProxy } from '../support/use-fault-proxy.js';
import { rejectionOf } from '../support/thrown.js';
import { waitFor } from '../support/timing.js';

/**
 * An obliterate that fails half-way (here the reply of its pause is lost and the link is cut) leaves
 * the topic running as it found it: nothing removed, and its pause cleared once Redis is back.
 */
describe('obliterate that fails half-way', () => {
  const instances = useDelayInstances('rev-obl-fail');
  const proxy = useFaultProxy();

  it('does not leave the topic paused', async () => {
    const [direct] = await instances.start(1);
    const [viaProxy] = await instances.start(1, { keyPrefix: direct.keyPrefix, redis: proxy.url });
    await direct.queue.schedule('orders', 'waits', { delay: 60_000 });
    expect((await direct.queue.stats('orders')).paused).toBe(false);

    // The pause runs in Redis; its reply is lost and the link is down until restored.
    const lost = proxy.loseReply(FaultProxy.script(pauseTopicScript)).then(() => proxy.cut());
    const failure = await rejectionOf(() => viaProxy.queue.obliterate('orders'));
    await lost;
    proxy.restore();
    expect(failure).toBeInstanceOf(RedisConnectionError);
    expect((await direct.queue.stats('orders')).scheduled).toBe(1); // nothing removed
    // Observed: paused stays true for good (no instance resumes it).
    await waitFor(async () => !(await direct.queue.stats('orders')).paused, 10_000, 'the topic to run again');
  }, 40_000);
});
