import { DelayQueueService } from '../../lib/index.js';
import type { DashboardJobDetail, DashboardJobList, DashboardTopics } from '../../lib/observability/dashboard/dashboard-api.interface.js';
import { callDashboard as call, slowJobs, startDashboardApp, type DashboardTestApp } from '../fixtures/dashboard-app.js';
import { deferred, waitFor } from '../support/timing.js';

/** The dashboard shows a running job's progress, and kept completed jobs with their result. */
describe('RedisLockDashboardModule: progress and results', () => {
  let t: DashboardTestApp;
  let queue: DelayQueueService;
  const api = async <T>(path: string) => (await call(t.base, 'GET', `/ops/locks/api${path}`)).body as T;

  beforeAll(async () => {
    slowJobs.close();
    t = await startDashboardApp({ path: '/ops/locks', history: { sampleMs: 60_000 } });
    queue = t.app.get(DelayQueueService);
  });
  afterAll(async () => {
    slowJobs.release();
    await t?.close();
  });

  it('lists a running job with its progress, then the completed job with its result and finish time', async () => {
    const finish = deferred();
    const progressed = deferred();
    const consumer = queue.consume(
      'dash.kept',
      async (_payload, job) => {
        await job.progress({ page: 2, of: 3 });
        job.log('page 2 of 3');
        progressed.resolve();
        await finish.promise;
        return { url: 'https://example.test/r.pdf' };
      },
      { keepCompleted: { count: 10 } },
    );
    await queue.schedule('dash.kept', { report: 1 }, { id: 'r1' });
    await progressed.promise;
    const active = await api<DashboardJobList>('/topics/dash.kept/jobs?state=active');
    expect(active.jobs).toEqual([expect.objectContaining({ id: 'r1', state: 'active', progress: { page: 2, of: 3 } })]);

    finish.resolve();
    const completed = await waitFor(
      async () => {
        const list = await api<DashboardJobList>('/topics/dash.kept/jobs?state=completed');
        return list.jobs.length === 1 ? list : undefined;
      },
      5_000,
      'the completed list',
    );
    expect(completed.total).toBe(1);
    expect(completed.jobs[0]).toMatchObject({ id: 'r1', state: 'completed', progress: { page: 2, of: 3 }, payloadPreview: '{"report":1}' });
    expect(completed.jobs[0].finishedAt).toBeLessThanOrEqual(completed.now);

    const detail = await api<DashboardJobDetail>('/topics/dash.kept/jobs/r1');
    expect(detail).toMatchObject({
      state: 'completed',
      result: { url: 'https://example.test/r.pdf' },
      progress: { page: 2, of: 3 },
      payload: { report: 1 },
      logs: ['page 2 of 3'],
    });
    expect(detail.finishedAt).toBe(completed.jobs[0].finishedAt);
    const topics = await api<DashboardTopics>('/topics');
    expect(topics.topics.find((x) => x.topic === 'dash.kept')).toMatchObject({ completed: 1 });
    await consumer.close();
  });

  it('has a completed tab, and shows progress and result in the job inspector', async () => {
    const page = (await call(t.base, 'GET', '/ops/locks')).body as string;
    expect(page).toContain('data-state="completed"');
    expect(page).toMatch(/'progress ' \+ JSON\.stringify\(detail\.progress\)/);
    expect(page).toMatch(/JSON\.stringify\(detail\.result, null, 2\)/);
  });
});
