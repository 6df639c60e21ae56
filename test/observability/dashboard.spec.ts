import { RedisLockDashboardModule } from 'nestjs-redis-lock/dashboard';
import type { DashboardJobList, DashboardLocks, DashboardTopics } from '../../lib/observability/dashboard/dashboard-api.interface.js';
import { DelayQueueService, InvalidOptionsError, InvalidTopicError, LockService } from '../../lib/index.js';
import {
  callDashboard as call,
  DenyAllGuard,
  failedRuns,
  slowJobs,
  startDashboardApp,
  useDashboardApps,
  type DashboardTestApp,
} from '../fixtures/dashboard-app.js';
import { waitFor } from '../support/timing.js';
import { rawRedis } from '../support/test-app.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

const ACTION = { 'x-redis-lock-dashboard': '1' };

describe('RedisLockDashboardModule: JSON API on real Redis', () => {
  let t: DashboardTestApp;
  let queue: DelayQueueService;
  let locks: LockService;
  const api = (method: string, path: string, headers?: Record<string, string>) => call(t.base, method, `/ops/locks/api${path}`, headers);
  const topic = async (name: string) => ((await api('GET', '/topics')).body as DashboardTopics).topics.find((x) => x.topic === name);
  const jobs = async (name: string, state: string) =>
    (await api('GET', `/topics/${encodeURIComponent(name)}/jobs?state=${state}`)).body as DashboardJobList;

  beforeAll(async () => {
    slowJobs.close();
    // Actions are tested here, so they are allowed explicitly (the default is read-only).
    t = await startDashboardApp({ path: '/ops/locks', history: { sampleMs: 60_000 }, readOnly: false });
    queue = t.app.get(DelayQueueService);
    locks = t.app.get(LockService);
  });
  afterAll(async () => {
    slowJobs.release();
    await t?.close();
  });

  it('serves one self-contained page under the configured path, with a strict Content-Security-Policy', async () => {
    for (const path of ['/ops/locks', '/ops/locks/']) {
      const page = await call(t.base, 'GET', path);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.body).toContain('<script>');
      expect(page.body).not.toMatch(/<script[^>]+src=|<link[^>]+href="(?!data:)/); // nothing loaded from elsewhere
    }
    const csp = (await call(t.base, 'GET', '/ops/locks')).headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect((await api('GET', '/meta')).body).toMatchObject({ readOnly: false, refreshMs: 3000, keyPrefix: t.keyPrefix });
  });

  it('lists topics with their counts: @OnDelayed handlers, and topics found in Redis', async () => {
    // Scheduled by "another service": this app only learns of it through SCAN.
    const other = rawRedis();
    await other.hset(new RedisKeySpace(t.keyPrefix).topic('dash.elsewhere').jobs, 'x', '{}');
    await other.zadd(new RedisKeySpace(t.keyPrefix).topic('dash.elsewhere').due, 1, 'x');
    await other.quit();
    await queue.schedule('dash.later', { n: 1 }, { delay: 3_600_000 });

    const topics = (await api('GET', '/topics')).body as DashboardTopics;
    const names = topics.topics.map((x) => x.topic);
    expect(names).toEqual(expect.arrayContaining(['dash.fail', 'dash.slow', 'dash.later', 'dash.elsewhere']));
    expect(names).toEqual([...names].sort());
    expect(topics.topics.find((x) => x.topic === 'dash.fail')).toMatchObject({ handler: true, dead: 0 });
    expect(topics.topics.find((x) => x.topic === 'dash.later')).toEqual({
      topic: 'dash.later',
      scheduled: 1,
      due: 0,
      active: 0,
      dead: 0,
      schedules: 0,
      paused: false,
      grouped: 0,
      busyGroups: 0,
      readyGroups: 0,
      handler: false,
    });
    expect(topics.topics.find((x) => x.topic === 'dash.elsewhere')).toMatchObject({ due: 1 });
  });

  it('lists scheduled and due jobs by due time with a payload preview, and shows one job whole', async () => {
    const big = { order: 'o-1', lines: Array.from({ length: 100 }, (_, i) => ({ sku: `sku-${i}`, qty: i })) };
    await queue.schedule('dash.list', big, { id: 'later', delay: 3_600_000 });
    await queue.schedule('dash.list', { order: 'o-2' }, { id: 'sooner', delay: 1_800_000 });
    await queue.schedule('dash.list', { order: 'o-3' }, { id: 'now' });

    const scheduled = await jobs('dash.list', 'scheduled');
    expect(scheduled.total).toBe(2);
    expect(scheduled.jobs.map((j) => j.id)).toEqual(['sooner', 'later']);
    const later = scheduled.jobs[1];
    expect(later.dueAt! - scheduled.now).toBeGreaterThan(3_500_000);
    expect(later.payloadPreview.length).toBeLessThan(260);
    expect(later.payloadPreview.endsWith('…')).toBe(true);
    expect(later.payloadLength).toBe(JSON.stringify(big).length);

    const due = await jobs('dash.list', 'due');
    expect(due).toMatchObject({ total: 1, jobs: [{ id: 'now', state: 'due', attempts: 0, payloadPreview: '{"order":"o-3"}' }] });

    const detail = await api('GET', '/topics/dash.list/jobs/later');
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ topic: 'dash.list', id: 'later', state: 'scheduled', payload: big });
    expect((await api('GET', '/topics/dash.list/jobs/nope')).status).toBe(404);
  });

  it('retries a dead job from the API, and deletes only dead ones', async () => {
    await queue.schedule('dash.fail', { reason: 'card declined' }, { id: 'pay-1', maxAttempts: 1 });
    await queue.schedule('dash.fail', { reason: 'timeout' }, { id: 'pay-2', maxAttempts: 1 });
    const dead = await waitFor(
      async () => {
        const list = await jobs('dash.fail', 'dead');
        return list.total === 2 ? list : undefined;
      },
      20_000,
      'two dead letters',
      { every: 100, retryErrors: true },
    );
    expect(dead.jobs.find((j) => j.id === 'pay-1')).toMatchObject({
      state: 'dead',
      attempts: 1,
      maxAttempts: 1,
      lastError: expect.stringContaining('card declined'),
    });
    expect(await topic('dash.fail')).toMatchObject({ dead: 2 });

    expect(failedRuns.get('pay-1')).toBe(1);
    const retried = await api('POST', '/topics/dash.fail/jobs/pay-1/retry', ACTION);
    expect(retried).toMatchObject({ status: 200, body: { retried: true } });
    // It runs again, fails again, and is dead again with its attempts counted afresh.
    await waitFor(
      async () => (failedRuns.get('pay-1') === 2 && (await queue.get('dash.fail', 'pay-1'))?.state === 'dead' ? true : undefined),
      20_000,
      'pay-1 dead again',
      { every: 100, retryErrors: true },
    );
    expect((await queue.get('dash.fail', 'pay-1'))?.attempts).toBe(1);

    expect((await api('POST', '/topics/dash.fail/jobs/pay-2/delete', ACTION)).status).toBe(200);
    expect(await queue.get('dash.fail', 'pay-2')).toBeNull();
    const again = await api('POST', '/topics/dash.fail/jobs/pay-2/delete', ACTION);
    expect(again.status).toBe(404);
    expect(again.body.message).toMatch(/not a dead letter/);

    await queue.schedule('dash.list', 1, { id: 'waiting', delay: 3_600_000 });
    expect((await api('POST', '/topics/dash.list/jobs/waiting/delete', ACTION)).status).toBe(404);
    expect((await queue.get('dash.list', 'waiting'))?.state).toBe('scheduled');
    expect((await api('POST', '/topics/dash.list/jobs/waiting/retry', ACTION)).status).toBe(404);

    const all = await api('POST', '/topics/dash.fail/retry-dead', ACTION);
    expect(all).toMatchObject({ status: 200, body: { retried: 1 } });
  });

  it('lists jobs waiting for their group, drains waiting jobs and cleans dead ones from the API, each only with its header', async () => {
    await queue.scheduleMany('dash.drain', [
      { payload: 'g1', id: 'g1', group: 'g', delay: 3_600_000 },
      { payload: 'g2', id: 'g2', group: 'g' },
      { payload: 'later', id: 'later', delay: 3_600_000 },
    ]);
    const grouped = await jobs('dash.drain', 'waiting-group');
    expect(grouped).toMatchObject({ state: 'waiting-group', total: 2 });
    expect(grouped.jobs.map((j) => j.id).sort()).toEqual(['g1', 'g2']);
    expect(await topic('dash.drain')).toMatchObject({ scheduled: 1, grouped: 2 });
    expect((await api('POST', '/topics/dash.drain/drain')).status).toBe(403);
    expect((await queue.stats('dash.drain')).grouped).toBe(2);
    expect(await api('POST', '/topics/dash.drain/drain', ACTION)).toMatchObject({ status: 200, body: { removed: 3 } });
    expect(await queue.stats('dash.drain')).toMatchObject({ scheduled: 0, due: 0, grouped: 0 });

    await queue.schedule('dash.fail', { reason: 'cleaned' }, { id: 'clean-1', maxAttempts: 1 });
    await waitFor(async () => ((await queue.get('dash.fail', 'clean-1'))?.state === 'dead' ? true : undefined), 20_000, 'clean-1 dead', {
      every: 100,
      retryErrors: true,
    });
    const deadBefore = (await queue.stats('dash.fail')).dead;
    expect((await api('POST', '/topics/dash.fail/clean/dead')).status).toBe(403);
    expect((await api('POST', '/topics/dash.fail/clean/due', ACTION)).status).toBe(400);
    expect(await api('POST', '/topics/dash.fail/clean/dead', ACTION)).toMatchObject({ status: 200, body: { removed: deadBefore } });
    expect(await queue.get('dash.fail', 'clean-1')).toBeNull();
  });

  it('pauses and resumes a topic from the API, and shows it paused with its groups in the topic list', async () => {
    await queue.pause('dash.pause');
    await queue.resume('dash.pause');
    await queue.scheduleMany(
      'dash.pause',
      [1, 2].map((n) => ({ payload: n, group: 'g', delay: 3_600_000 })),
    );
    expect(await api('POST', '/topics/dash.pause/pause', ACTION)).toMatchObject({ status: 200, body: { changed: true } });
    expect(await api('POST', '/topics/dash.pause/pause', ACTION)).toMatchObject({ status: 200, body: { changed: false } });
    expect(await topic('dash.pause')).toMatchObject({ paused: true, grouped: 2, busyGroups: 0 });
    expect((await queue.stats('dash.pause')).paused).toBe(true);
    expect(await api('POST', '/topics/dash.pause/resume', ACTION)).toMatchObject({ status: 200, body: { changed: true } });
    expect(await topic('dash.pause')).toMatchObject({ paused: false });
  });

  it('cancels a waiting job but not a running one', async () => {
    await queue.schedule('dash.cancel', { n: 1 }, { id: 'a/b c', delay: 3_600_000 });
    const cancelled = await api('POST', `/topics/dash.cancel/jobs/${encodeURIComponent('a/b c')}/cancel`, ACTION);
    expect(cancelled).toMatchObject({ status: 200, body: { cancelled: true } });
    expect(await queue.get('dash.cancel', 'a/b c')).toBeNull();
    expect((await api('POST', '/topics/dash.cancel/jobs/a/cancel', ACTION)).status).toBe(404);

    await queue.schedule('dash.slow', { n: 1 }, { id: 'running' });
    await waitFor(async () => (slowJobs.started.includes('running') ? true : undefined), 20_000, 'the slow handler to start', {
      every: 100,
      retryErrors: true,
    });
    const active = await jobs('dash.slow', 'active');
    expect(active.jobs).toMatchObject([{ id: 'running', state: 'active', attempts: 1 }]);
    expect(active.jobs[0].visibleUntil).toBeGreaterThan(active.now);
    const refused = await api('POST', '/topics/dash.slow/jobs/running/cancel', ACTION);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/running/);
    expect((await queue.get('dash.slow', 'running'))?.state).toBe('active');
  });

  it('refuses a state-changing request without its header (CSRF), before touching Redis', async () => {
    await queue.schedule('dash.list', 1, { id: 'csrf', delay: 3_600_000 });
    const response = await api('POST', '/topics/dash.list/jobs/csrf/cancel');
    expect(response.status).toBe(403);
    expect(response.body.message).toContain('x-redis-lock-dashboard');
    expect((await queue.get('dash.list', 'csrf'))?.state).toBe('scheduled');
  });

  it('answers bad input with 400 and a message, never 500', async () => {
    const badTopic = await api('GET', `/topics/${encodeURIComponent('bad topic{}')}/jobs`);
    expect(badTopic.status).toBe(400);
    expect(badTopic.body).toMatchObject({ code: 'INVALID_TOPIC', message: expect.stringContaining('Invalid topic') });
    expect((await api('POST', `/topics/${encodeURIComponent('no spaces')}/jobs/x/retry`, ACTION)).status).toBe(400);
    expect((await api('GET', '/topics/dash.list/jobs?state=finished')).body.message).toMatch(/due, scheduled, active, dead/);
    expect((await api('GET', '/topics/dash.list/jobs?state=due&limit=0')).status).toBe(400);
    expect((await api('GET', '/topics/dash.list/jobs?state=due&limit=abc')).status).toBe(400);
  });

  it('lists held locks of every kind with owner, fencing token and remaining lease', async () => {
    const plain = await locks.acquire('order:{42}', { leaseTime: 60_000 });
    const reader = await locks.readWrite('report').read({ leaseTime: 60_000 });
    const sem = locks.semaphore('exports', 3);
    const permits = [await sem.acquire({ leaseTime: 60_000 }), await sem.acquire({ leaseTime: 60_000 })];
    try {
      const list = (await api('GET', '/locks')).body as DashboardLocks;
      expect(list.truncated).toBe(false);
      const byName = new Map(list.locks.map((l) => [l.name, l]));

      const order = byName.get('order:{42}')!; // braces are escaped in the key and shown as given
      expect(order).toMatchObject({ kind: 'mutex', fencingToken: plain.fencingToken, waiting: 0 });
      expect(order.key).toBe(`${t.keyPrefix}:lock:{order:%7B42%7D}`);
      expect(order.holders).toEqual([{ owner: expect.any(String), count: 1 }]);
      expect(order.leaseMs).toBeGreaterThan(30_000);
      expect(order.leaseMs).toBeLessThanOrEqual(60_000);

      expect(byName.get('report')).toMatchObject({
        kind: 'read-write',
        fencingToken: reader.fencingToken,
        holders: [{ mode: 'read', count: 1 }],
      });
      expect(byName.get('report')!.holders[0].leaseMs).toBeGreaterThan(30_000);

      const exports = byName.get('exports')!;
      expect(exports).toMatchObject({ kind: 'semaphore', fencingToken: permits[1].fencingToken });
      expect(exports.holders).toHaveLength(2);
      for (const h of exports.holders) expect(h.leaseMs).toBeGreaterThan(30_000);
    } finally {
      await Promise.all([plain.release(), reader.release(), ...permits.map((p) => p.release())]);
    }
    const after = (await api('GET', '/locks')).body as DashboardLocks;
    expect(after.locks.map((l) => l.name)).not.toEqual(expect.arrayContaining(['order:{42}']));
  });

  it('shows a re-entered lock as one holder with its reentry count', async () => {
    const listed = async (name: string) => ((await api('GET', '/locks')).body as DashboardLocks).locks.find((l) => l.name === name);
    await locks.using('dash:nested', async (outer) => {
      await locks.using('dash:nested', async () => {
        expect(await listed('dash:nested')).toMatchObject({
          kind: 'mutex',
          fencingToken: outer.fencingToken,
          holders: [{ owner: expect.any(String), count: 2 }],
        });
      });
      expect((await listed('dash:nested'))!.holders).toEqual([{ owner: expect.any(String), count: 1 }]);
    });
  });

  it('keeps a history of backlog and handler lateness for the plots', async () => {
    const { DashboardHistory } = await import('../../lib/observability/dashboard/dashboard-history.js');
    const history = t.app.get(DashboardHistory, { strict: false });
    await queue.scheduleMany('dash.backlog', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await history.sample();
    const { body } = await api('GET', '/history');
    expect(body.sampleMs).toBe(60_000);
    const last = body.samples[body.samples.length - 1];
    expect(last.due['dash.backlog']).toBe(3);
    // Handlers have started in this process (the fail and slow topics above): their lateness was recorded.
    expect(body.samples.some((s: any) => s.started > 0 && s.latenessMax !== null)).toBe(true);
  });
});

describe('RedisLockDashboardModule: a sharded topic', () => {
  let t: DashboardTestApp;
  let queue: DelayQueueService;
  const api = (method: string, path: string, headers?: Record<string, string>) => call(t.base, method, `/_locks/api${path}`, headers);

  beforeAll(async () => {
    t = await startDashboardApp({ history: { sampleMs: 0 }, readOnly: false }, { handlers: false, shards: { 'dash.hot': 3 } });
    queue = t.app.get(DelayQueueService);
  });
  afterAll(() => t?.close());

  it('shows the topic once, lists the jobs of every shard in due order, and cancels in the right shard', async () => {
    const ids = Array.from({ length: 9 }, (_, i) => `hot-${i}`);
    await queue.scheduleMany(
      'dash.hot',
      ids.map((id, i) => ({ payload: { i }, id, delay: 3_600_000 + i * 1_000 })),
    );
    // The jobs really are spread over the shards' own keys.
    const redis = rawRedis();
    const perShard = await Promise.all([0, 1, 2].map((n) => redis.hlen(new RedisKeySpace(t.keyPrefix).topic(`dash.hot#${n}`).jobs)));
    await redis.quit();
    expect(perShard.filter((count) => count > 0).length).toBeGreaterThan(1);

    const topics = ((await api('GET', '/topics')).body as DashboardTopics).topics;
    expect(topics.map((x) => x.topic)).toEqual(['dash.hot']); // found by SCAN as dash.hot#0..2, shown as one
    expect(topics[0]).toMatchObject({ scheduled: 9, due: 0, active: 0, dead: 0 });

    const listed = (await api('GET', '/topics/dash.hot/jobs?state=scheduled&limit=5')).body as DashboardJobList;
    expect(listed.total).toBe(9);
    expect(listed.jobs.map((j) => j.id)).toEqual(ids.slice(0, 5));

    for (const id of ['hot-3', 'hot-7']) {
      expect(await api('POST', `/topics/dash.hot/jobs/${id}/cancel`, ACTION)).toMatchObject({ status: 200, body: { cancelled: true } });
      expect(await queue.get('dash.hot', id)).toBeNull();
    }
    expect(await queue.stats('dash.hot')).toMatchObject({ scheduled: 7 });
    expect((await api('GET', '/topics/dash.hot%231/jobs?state=scheduled')).status).toBe(400); // a shard is not a topic of its own
  });
});

describe('RedisLockDashboardModule: protection', () => {
  const start = useDashboardApps();

  it('in read-only mode refuses retry, delete and cancel with 403 and says so in /api/meta', async () => {
    const t = await start({ readOnly: true }, { handlers: false });
    const queue = t.app.get(DelayQueueService);
    await queue.schedule('ro.topic', 1, { id: 'keep', delay: 3_600_000 });
    expect((await call(t.base, 'GET', '/_locks/api/meta')).body.readOnly).toBe(true);
    for (const action of ['cancel', 'retry', 'delete']) {
      const response = await call(t.base, 'POST', `/_locks/api/topics/ro.topic/jobs/keep/${action}`, ACTION);
      expect(response.status).toBe(403);
      expect(response.body.message).toMatch(/read-only/);
    }
    expect((await call(t.base, 'POST', '/_locks/api/topics/ro.topic/retry-dead', ACTION)).status).toBe(403);
    for (const action of ['pause', 'resume', 'drain', 'clean/dead'])
      expect((await call(t.base, 'POST', `/_locks/api/topics/ro.topic/${action}`, ACTION)).status).toBe(403);
    expect((await queue.stats('ro.topic')).paused).toBe(false);
    expect((await queue.get('ro.topic', 'keep'))?.state).toBe('scheduled');
    // Reading still works.
    expect((await call(t.base, 'GET', '/_locks/api/topics/ro.topic/jobs?state=scheduled')).body.total).toBe(1);
  });

  it('decides read-only per request when given a function', async () => {
    const t = await start({ readOnly: (req: { headers: Record<string, string> }) => req.headers['x-role'] !== 'ops' }, { handlers: false });
    const queue = t.app.get(DelayQueueService);
    await queue.schedule('ro.fn', 1, { id: 'j', delay: 3_600_000 });
    expect((await call(t.base, 'POST', '/_locks/api/topics/ro.fn/jobs/j/cancel', { ...ACTION, 'x-role': 'viewer' })).status).toBe(403);
    expect((await call(t.base, 'GET', '/_locks/api/meta', { 'x-role': 'ops' })).body.readOnly).toBe(false);
    expect((await call(t.base, 'POST', '/_locks/api/topics/ro.fn/jobs/j/cancel', { ...ACTION, 'x-role': 'ops' })).status).toBe(200);
  });

  it('runs guard classes before the page and every API route', async () => {
    const t = await start({ guards: [DenyAllGuard] }, { handlers: false });
    for (const path of ['/_locks', '/_locks/api/meta', '/_locks/api/topics', '/_locks/api/locks']) {
      expect((await call(t.base, 'GET', path)).status).toBe(403);
    }
    expect((await call(t.base, 'POST', '/_locks/api/topics/x/retry-dead', ACTION)).status).toBe(403);
  });

  it('takes a canActivate(request) hook, e.g. a token check, and a global prefix', async () => {
    const t = await start(
      { path: 'admin/jobs', canActivate: (req: { headers: Record<string, string> }) => req.headers.authorization === 'Bearer s3cret' },
      { handlers: false, globalPrefix: 'internal' },
    );
    expect((await call(t.base, 'GET', '/internal/admin/jobs')).status).toBe(403);
    expect((await call(t.base, 'GET', '/internal/admin/jobs/api/topics', { authorization: 'Bearer nope' })).status).toBe(403);
    const ok = await call(t.base, 'GET', '/internal/admin/jobs', { authorization: 'Bearer s3cret' });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('Redis locks');
    expect((await call(t.base, 'GET', '/internal/admin/jobs/api/topics', { authorization: 'Bearer s3cret' })).status).toBe(200);
  });

  it('shows only the configured topics when given a list', async () => {
    const t = await start({ topics: ['cfg.one', 'cfg.two'] });
    await t.app.get(DelayQueueService).schedule('cfg.other', 1);
    const body = (await call(t.base, 'GET', '/_locks/api/topics')).body as DashboardTopics;
    expect(body.topics.map((x) => x.topic)).toEqual(['cfg.one', 'cfg.two']);
  });

  it('rejects bad options when the module is declared', () => {
    expect(() => RedisLockDashboardModule.forRoot({ path: '/a/:id' })).toThrow(InvalidOptionsError);
    expect(() => RedisLockDashboardModule.forRoot({ path: '' })).toThrow(/dashboard\.path/);
    expect(() => RedisLockDashboardModule.forRoot({ refreshMs: 10 })).toThrow(/refreshMs/);
    expect(() => RedisLockDashboardModule.forRoot({ topics: ['ok', 'not ok'] })).toThrow(InvalidTopicError);
    expect(() => RedisLockDashboardModule.forRoot({ guards: [{} as never] })).toThrow(/guards/);
    expect(() => RedisLockDashboardModule.forRoot({ allowRemote: 'yes' as never })).toThrow(/allowRemote/);
    for (const origin of ['ops.example.com', 'https://ops.example.com/admin', 'null', 'ftp://ops.example.com']) {
      expect(() => RedisLockDashboardModule.forRoot({ allowedOrigins: [origin] })).toThrow(/allowedOrigins/);
    }
    expect(() => RedisLockDashboardModule.forRoot({ allowedOrigins: ['https://OPS.example.com/', 'http://localhost:8080'] })).not.toThrow();
  });
});

describe('RedisLockDashboardModule: topic discovery', () => {
  let t: DashboardTestApp;
  beforeAll(async () => {
    t = await startDashboardApp({ history: { sampleMs: 0 } }, { handlers: false });
  });
  afterAll(() => t?.close());

  it(
    'finds every topic with jobs even when one topic has a hundred thousand short-lived keys of its ' + "own (claims' operation records)",
    async () => {
      const redis = rawRedis();
      const noise = (i: number) => `${t.keyPrefix}:dq:{dash.busy}:op:claim:${i}`;
      try {
        for (let from = 0; from < 100_000; from += 10_000) {
          const batch = redis.pipeline();
          for (let i = from; i < from + 10_000; i++) batch.set(noise(i), '1', 'PX', 120_000);
          await batch.exec();
        }
        await t.app.get(DelayQueueService).schedule('dash.quiet', 1, { delay: 3_600_000 });
        await redis.hset(new RedisKeySpace(t.keyPrefix).topic('dash.elsewhere').jobs, 'x', '{}');

        const topics = (await call(t.base, 'GET', '/_locks/api/topics')).body as DashboardTopics;
        expect(topics.topics.map((x) => x.topic)).toEqual(expect.arrayContaining(['dash.elsewhere', 'dash.quiet']));
        expect(topics.topics.map((x) => x.topic)).not.toContain('dash.busy'); // no job: nothing to show
      } finally {
        for (let from = 0; from < 100_000; from += 10_000) {
          await redis.unlink(...Array.from({ length: 10_000 }, (_, i) => noise(from + i)));
        }
        await redis.quit();
      }
    },
    60_000,
  );
});
