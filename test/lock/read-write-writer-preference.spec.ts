import { LockService } from '../../lib/index.js';
import { useLockServicePair } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';

/** These waits have no bound of their own: the test's timeout (jest.config.js, 60 s) is theirs. */
const TEST_TIMEOUT_MS = 60_000;

/**
 * Writer preference: once a writer waits, new readers wait behind it, also on a lock that is
 * free for an instant between two reads, so a process reading in a tight loop cannot starve it.
 */
describe('read/write lock: writer preference', () => {
  const { a, b } = useLockServicePair('wpref', { lock: { leaseTime: 5_000 } });

  /**
   * Reads `name` in a tight loop on `locks` until stopped, counting the reads. Each release is sent
   * right before the next read (as many concurrent requests of one process would), so the lock is
   * free only for the instant between the two commands.
   */
  function readLoop(locks: LockService, name: string) {
    let running = true;
    let reads = 0;
    const done = (async () => {
      let read = await locks.readWrite(name).read({ waitTimeout: 30_000 });
      while (running) {
        reads++;
        const released = read.release();
        const next = locks.readWrite(name).read({ waitTimeout: 30_000 });
        await released;
        read = await next;
      }
      await read.release();
    })();
    return {
      get reads() {
        return reads;
      },
      stop: () => {
        running = false;
        return done;
      },
    };
  }

  it('gives the write lock to a waiting writer while another process reads in a tight loop', async () => {
    const loop = readLoop(a, 'hot');
    try {
      await waitFor(() => loop.reads >= 20, TEST_TIMEOUT_MS, 'twenty reads');
      const writer = await b.readWrite('hot').write({ waitTimeout: 2_500 });
      expect(writer.held).toBe(true);
      // While the writer holds it, the reading process gets nothing.
      const readsWhileWriting = loop.reads;
      expect(await a.readWrite('hot').tryRead()).toBeNull();
      await writer.release();
      // Readers resume once the writer is done.
      await waitFor(() => loop.reads > readsWhileWriting, TEST_TIMEOUT_MS, 'reads to resume');
    } finally {
      await loop.stop();
    }
    expect(await a.isLocked('hot')).toBe(false);
  });

  it('serves two waiting writers while two processes read in tight loops', async () => {
    const loops = [readLoop(a, 'hotter'), readLoop(b, 'hotter')];
    try {
      await waitFor(() => loops.every((l) => l.reads >= 10), TEST_TIMEOUT_MS, 'ten reads in each loop');
      const write = async (locks: LockService) => {
        const writer = await locks.readWrite('hotter').write({ waitTimeout: 5_000 });
        await writer.release();
        return 'written';
      };
      const outcomes = await Promise.allSettled([write(a), write(b)]);
      const writers = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).name));
      expect(writers).toEqual(['written', 'written']);
    } finally {
      await Promise.all(loops.map((l) => l.stop()));
    }
    expect(await a.isLocked('hotter')).toBe(false);
  });

  it('stops holding readers back once a waiting writer gives up', async () => {
    const reader = await a.readWrite('gave-up').read();
    await expect(b.readWrite('gave-up').write({ waitTimeout: 300 })).rejects.toMatchObject({ name: 'LockAcquireTimeoutError' });
    // The writer is no longer waiting: new readers join at once.
    const another = await b.readWrite('gave-up').tryRead();
    expect(another).not.toBeNull();
    await another!.release();
    await reader.release();
  });

  it('parks a reader behind a waiting writer on a free lock, and lets it in after the writer', async () => {
    const first = await a.readWrite('queue').read();
    const writer = b.readWrite('queue').write({ waitTimeout: 10_000 });
    // The writer registers on its first try; poll until a new reader is held back by it.
    let probe = await a.readWrite('queue').tryRead();
    while (probe) {
      await probe.release();
      await sleep(5);
      probe = await a.readWrite('queue').tryRead();
    }
    const order: string[] = [];
    const reader = a
      .readWrite('queue')
      .read({ waitTimeout: 10_000 })
      .then((r) => (order.push('reader'), r));
    await first.release();
    const held = await writer;
    order.push('writer');
    await held.release();
    const read = await reader;
    await read.release();
    expect(order).toEqual(['writer', 'reader']);
  });
});
