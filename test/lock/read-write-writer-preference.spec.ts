import { LockService } from '../../lib';
import { useLockServicePair } from '../support/test-app';

/**
 * Writer preference: once a writer waits, new readers wait behind it, also on a lock that is
 * free for an instant between two reads, so a process reading in a tight loop cannot starve it.
 */
describe('read/write lock: writer preference', () => {
  const pair = useLockServicePair('wpref', { lock: { leaseTime: 5_000 } });
  let a: LockService;
  let b: LockService;
  beforeAll(() => ({ a, b } = pair.services()));

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

  async function until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  it('gives the write lock to a waiting writer while another process reads in a tight loop', async () => {
    const loop = readLoop(a, 'hot');
    try {
      await until(() => loop.reads >= 20);
      const writer = await b.readWrite('hot').write({ waitTimeout: 2_500 });
      expect(writer.held).toBe(true);
      // While the writer holds it, the reading process gets nothing.
      const readsWhileWriting = loop.reads;
      expect(await a.readWrite('hot').tryRead()).toBeNull();
      await writer.release();
      // Readers resume once the writer is done.
      await until(() => loop.reads > readsWhileWriting);
    } finally {
      await loop.stop();
    }
    expect(await a.isLocked('hot')).toBe(false);
  });

  it('serves two waiting writers while two processes read in tight loops', async () => {
    const loops = [readLoop(a, 'hotter'), readLoop(b, 'hotter')];
    try {
      await until(() => loops.every((l) => l.reads >= 10));
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
});
