import type { DashboardJobList } from '../../lib/observability/dashboard/dashboard-api.interface.js';
import { DelayQueueService } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { callDashboard as call, startDashboardApp, useDashboardApps, type DashboardTestApp } from '../fixtures/dashboard-app.js';
import { rawRedis } from '../support/test-app.js';

const ACTION = { 'x-redis-lock-dashboard': '1' };

/**
 * The dashboard shows payloads and can cancel, retry and delete jobs, so what it does when nobody
 * configured anything must be the safe thing: read-only, for loopback clients only, refusing
 * cross-site requests whatever the application's CORS setting, and cheap on Redis while it refreshes.
 */
describe('RedisLockDashboardModule: safe by default', () => {
  const start = useDashboardApps({ handlers: false });

  it('is read-only unless readOnly: false is set: a cancel answers 403 and the job stays', async () => {
    const t = await start({});
    const queue = t.app.get(DelayQueueService);
    await queue.schedule('safe.ro', { n: 1 }, { id: 'keep', delay: 3_600_000 });
    expect((await call(t.base, 'GET', '/_locks/api/meta')).body.readOnly).toBe(true);
    for (const action of ['cancel', 'retry', 'delete']) {
      const response = await call(t.base, 'POST', `/_locks/api/topics/safe.ro/jobs/keep/${action}`, ACTION);
      expect(response.status).toBe(403);
      expect(response.body.message).toMatch(/read-only.*readOnly: false/);
    }
    expect((await call(t.base, 'POST', '/_locks/api/topics/safe.ro/retry-dead', ACTION)).status).toBe(403);
    expect((await queue.get('safe.ro', 'keep'))?.state).toBe('scheduled');
  });

  it('serves loopback clients only by default: behind a trusted proxy, a remote client is refused', async () => {
    const t = await start({}, { trustProxy: 'loopback' });
    expect((await call(t.base, 'GET', '/_locks/api/topics')).status).toBe(200);
    expect((await call(t.base, 'GET', '/_locks/api/topics', { 'x-forwarded-for': '127.0.0.1' })).status).toBe(200);
    for (const path of ['/_locks', '/_locks/api/meta', '/_locks/api/topics', '/_locks/api/locks']) {
      const refused = await call(t.base, 'GET', path, { 'x-forwarded-for': '203.0.113.7' });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        code: 'DASHBOARD_REMOTE_CLIENT',
        message: expect.stringMatching(/203\.0\.113\.7.*allowRemote/),
      });
    }
  });

  it('refuses a request forwarded by a proxy the application does not trust: behind it every client looks local', async () => {
    const t = await start({});
    expect((await call(t.base, 'GET', '/_locks/api/topics')).status).toBe(200);
    const forwardings: Array<Record<string, string>> = [
      { 'x-forwarded-for': '203.0.113.7' },
      { forwarded: 'for=203.0.113.7' },
      { 'x-real-ip': '203.0.113.7' },
    ];
    for (const forwarded of forwardings) {
      const refused = await call(t.base, 'GET', '/_locks/api/topics', forwarded);
      expect(refused.status).toBe(403);
      expect(refused.body.message).toMatch(/trust proxy/);
    }
  });

  it('serves remote clients once a guard, a canActivate hook or allowRemote: true says who may', async () => {
    const remote = { 'x-forwarded-for': '203.0.113.7' };
    const hooked = await start({ canActivate: () => true }, { trustProxy: 'loopback' });
    expect((await call(hooked.base, 'GET', '/_locks/api/topics', remote)).status).toBe(200);
    const open = await start({ allowRemote: true, allowedHosts: ['ops.example.com'] }, { trustProxy: 'loopback' });
    expect((await call(open.base, 'GET', '/_locks/api/topics', remote)).status).toBe(200);
    const both = await start({ canActivate: () => true, allowRemote: false }, { trustProxy: 'loopback' });
    expect((await call(both.base, 'GET', '/_locks/api/topics', remote)).status).toBe(403);
  });

  it('refuses cross-site actions even when the application allows credentialed CORS from any origin', async () => {
    const t = await start({ readOnly: false }, { cors: { origin: true, credentials: true } });
    const queue = t.app.get(DelayQueueService);
    await queue.schedule('safe.csrf', { n: 1 }, { id: 'victim', delay: 3_600_000 });
    const cancel = '/_locks/api/topics/safe.csrf/jobs/victim/cancel';

    const fromEvilOrigin = await call(t.base, 'POST', cancel, { ...ACTION, origin: 'https://evil.example' });
    expect(fromEvilOrigin.status).toBe(403);
    expect(fromEvilOrigin.body).toMatchObject({ code: 'DASHBOARD_CROSS_ORIGIN', message: expect.stringContaining('https://evil.example') });
    const crossSite = await call(t.base, 'POST', cancel, { ...ACTION, 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.code).toBe('DASHBOARD_CROSS_ORIGIN');
    expect((await call(t.base, 'POST', cancel, { ...ACTION, origin: 'null' })).status).toBe(403);
    expect((await queue.get('safe.csrf', 'victim'))?.state).toBe('scheduled');

    // Nor can such a page read payloads through the permissive CORS setting.
    const read = await call(t.base, 'GET', '/_locks/api/topics/safe.csrf/jobs?state=scheduled', { origin: 'https://evil.example' });
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).not.toContain('victim');

    // The dashboard's own page (same origin) still works.
    const own = await call(t.base, 'POST', cancel, { ...ACTION, origin: t.base, 'sec-fetch-site': 'same-origin' });
    expect(own).toMatchObject({ status: 200, body: { cancelled: true } });
  });

  it('accepts actions from the origins listed in allowedOrigins, and only those', async () => {
    const t = await start({ readOnly: false, allowedOrigins: ['https://ops.example.com'] }, { cors: { origin: true, credentials: true } });
    const queue = t.app.get(DelayQueueService);
    await queue.scheduleMany('safe.allow', [
      { payload: 1, id: 'a', delay: 3_600_000 },
      { payload: 2, id: 'b', delay: 3_600_000 },
    ]);
    const portal = { ...ACTION, origin: 'https://ops.example.com', 'sec-fetch-site': 'cross-site' };
    expect((await call(t.base, 'POST', '/_locks/api/topics/safe.allow/jobs/a/cancel', portal)).status).toBe(200);
    const other = { ...ACTION, origin: 'https://ops.example.com.evil.example', 'sec-fetch-site': 'cross-site' };
    expect((await call(t.base, 'POST', '/_locks/api/topics/safe.allow/jobs/b/cancel', other)).status).toBe(403);
    expect((await queue.get('safe.allow', 'b'))?.state).toBe('scheduled');
  });
});

describe('RedisLockDashboardModule: bytes from Redis per refresh', () => {
  let server: LocalRedisServer;
  let t: DashboardTestApp;

  // A private Redis: INFO's byte counter counts every client, and other suites share the run's Redis.
  beforeAll(async () => {
    server = await startLocalRedisServer();
    t = await startDashboardApp({ history: { sampleMs: 0 } }, { handlers: false, redisUrl: server.url, maxPayloadBytes: 4 * 1024 * 1024 });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await server?.stop();
  });

  it('sends a bounded preview of each payload, not the payload: 50 jobs of 2 MB cost kilobytes per refresh', async () => {
    const queue = t.app.get(DelayQueueService);
    const payload = { blob: 'x'.repeat(2 * 1024 * 1024) };
    const payloadLength = JSON.stringify(payload).length;
    // One job per call: a call of ten 2 MB jobs is a 20 MB command, which a loaded machine's Redis can
    // take longer than `unreachableTimeout` (2 s) to read and answer (docs/guarantees.md, "Redis did not answer").
    for (let i = 0; i < 50; i++) await queue.schedule('dash.big', payload, { id: `big-${i}`, delay: 3_600_000 });
    // What the page asks for on every refresh, with the topic's scheduled jobs open.
    const refresh = () =>
      Promise.all(
        ['/topics', '/locks', '/history', '/topics/dash.big/jobs?state=scheduled&limit=50'].map((path) =>
          call(t.base, 'GET', `/_locks/api${path}`),
        ),
      );
    await refresh(); // scripts loaded, topics discovered: the steady state is what repeats every few seconds

    const redis = rawRedis(server.url);
    const sentBytes = async () => Number(/total_net_output_bytes:(\d+)/.exec(await redis.info('stats'))![1]);
    try {
      const before = await sentBytes();
      const replies = await refresh();
      const sent = (await sentBytes()) - before;
      const list = replies[3].body as DashboardJobList;
      expect(list.total).toBe(50);
      expect(list.jobs).toHaveLength(50);
      for (const job of list.jobs) {
        expect(job.payloadLength).toBe(payloadLength);
        expect(job.payloadPreview.startsWith('{"blob":"xxxx')).toBe(true);
        expect(job.payloadPreview.length).toBeLessThan(260);
      }
      const answered = replies.reduce((sum, r) => sum + JSON.stringify(r.body).length, 0);
      console.log(`one dashboard refresh over 50 jobs of 2 MB: ${sent} bytes sent by Redis, ${answered} bytes of JSON answered`);
      expect(sent).toBeLessThan(50 * 2_048 + 32_768);
    } finally {
      await redis.quit();
    }
  }, 120_000);
});
