import { retryWithBackoff } from '../../../../lib/core/time/retry-with-backoff.js';

/** An attempt that fails `failures` times, then resolves to `value`; records each call. */
function flaky<T>(failures: number, value: T) {
  const calls: number[] = [];
  const attempt = async () => {
    calls.push(calls.length + 1);
    if (calls.length <= failures) throw new Error(`failure ${calls.length}`);
    return value;
  };
  return { attempt, calls };
}

/** A wait that records the delays asked for and resolves at once. */
function recordingWait() {
  const waits: number[] = [];
  return { waits, wait: async (ms: number) => void waits.push(ms) };
}

describe('retryWithBackoff', () => {
  it('resolves to the value of the first try that succeeds, waiting delay(failures) before each retry', async () => {
    const { attempt, calls } = flaky(3, 'ok');
    const { waits, wait } = recordingWait();
    const failed: Array<[string, number]> = [];
    const outcome = await retryWithBackoff(attempt, {
      failed: (error, failures) => failed.push([(error as Error).message, failures]),
      delay: (failures) => failures * 100,
      wait,
    });
    expect(outcome).toEqual({ succeeded: true, value: 'ok' });
    expect(calls).toEqual([1, 2, 3, 4]);
    expect(failed).toEqual([
      ['failure 1', 1],
      ['failure 2', 2],
      ['failure 3', 3],
    ]);
    expect(waits).toEqual([100, 200, 300]);
  });

  it('tries once without waiting when the first try succeeds', async () => {
    const { attempt, calls } = flaky(0, 7);
    const { waits, wait } = recordingWait();
    const delays: number[] = [];
    const outcome = await retryWithBackoff(attempt, { failed: () => undefined, delay: (n) => (delays.push(n), 1), wait });
    expect(outcome).toEqual({ succeeded: true, value: 7 });
    expect(calls).toEqual([1]);
    expect(waits).toEqual([]);
    expect(delays).toEqual([]);
  });

  it('gives up without a last wait once giveUp answers true after a failure', async () => {
    const { attempt, calls } = flaky(10, 'never');
    const { waits, wait } = recordingWait();
    const failed: number[] = [];
    const outcome = await retryWithBackoff(attempt, {
      failed: (_, failures) => failed.push(failures),
      giveUp: (failures) => failures >= 5,
      delay: () => 10,
      wait,
    });
    expect(outcome).toEqual({ succeeded: false });
    expect(calls).toEqual([1, 2, 3, 4, 5]);
    expect(failed).toEqual([1, 2, 3, 4, 5]);
    expect(waits).toEqual([10, 10, 10, 10]);
  });

  it('stops before a try, or before a wait, once stopped answers true', async () => {
    let stop = false;
    const { attempt, calls } = flaky(10, 'never');
    const waits: number[] = [];
    const outcome = await retryWithBackoff(attempt, {
      failed: () => undefined,
      delay: () => 5,
      stopped: () => stop,
      wait: async (ms) => {
        waits.push(ms);
        if (waits.length === 2) stop = true; // stopped during the second wait: no third try
      },
    });
    expect(outcome).toEqual({ succeeded: false });
    expect(calls).toEqual([1, 2]);
    expect(waits).toEqual([5, 5]);

    const never = flaky(0, 'x');
    expect(await retryWithBackoff(never.attempt, { failed: () => undefined, delay: () => 1, stopped: () => true })).toEqual({
      succeeded: false,
    });
    expect(never.calls).toEqual([]);
  });

  it('stops after a failure without waiting when stopped meanwhile', async () => {
    let stop = false;
    const { waits, wait } = recordingWait();
    const outcome = await retryWithBackoff(
      async () => {
        stop = true;
        throw new Error('down');
      },
      { failed: () => undefined, delay: () => 1, stopped: () => stop, wait },
    );
    expect(outcome).toEqual({ succeeded: false });
    expect(waits).toEqual([]);
  });

  it('resumes after failures counted elsewhere: waits delay(failuresSoFar) first and counts on from there', async () => {
    const { attempt, calls } = flaky(1, 'late');
    const { waits, wait } = recordingWait();
    const failed: number[] = [];
    const outcome = await retryWithBackoff(attempt, {
      failuresSoFar: 2,
      failed: (_, failures) => failed.push(failures),
      delay: (failures) => failures * 10,
      wait,
    });
    expect(outcome).toEqual({ succeeded: true, value: 'late' });
    expect(calls).toEqual([1, 2]);
    expect(failed).toEqual([3]);
    expect(waits).toEqual([20, 30]);
  });

  it('waits on a real timer by default', async () => {
    const { attempt, calls } = flaky(1, 'ok');
    const started = performance.now();
    const outcome = await retryWithBackoff(attempt, { failed: () => undefined, delay: () => 20 });
    expect(outcome).toEqual({ succeeded: true, value: 'ok' });
    expect(calls).toEqual([1, 2]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
  });
});
