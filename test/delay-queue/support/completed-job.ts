import type { DelayQueueService, DelayedJob } from '../../../lib/index.js';
import { waitFor } from '../../support/timing.js';

/** Waits up to `timeoutMs` for the job `id` of `topic` to be kept as completed (keepCompleted), and returns get() of it. */
export function completedJob<T = unknown>(queue: DelayQueueService, topic: string, id: string, timeoutMs = 5_000): Promise<DelayedJob<T>> {
  return waitFor(
    async () => {
      const job = await queue.get<T>(topic, id);
      return job?.state === 'completed' ? job : undefined;
    },
    timeoutMs,
    `${id} to complete`,
  );
}
