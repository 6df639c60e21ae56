import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import {
  DelayQueueService,
  JobRateLimitedError,
  LockService,
  RedisLockEvents,
  type JobRateLimitedEvent,
  type LockHandle,
} from '../../lib/index.js';
import { startDashboardApp, type DashboardTestApp } from '../fixtures/dashboard-app.js';
import { AppModule } from '../../sample-app/src/app.module.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { httpJson } from '../support/http-json.js';
import { holdsWithin, within } from '../support/timing.js';
import { chromiumPath } from '../support/chromium.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test-artifacts', 'dashboard');
const DOCS_IMAGE = join(ROOT, 'docs', 'images', 'dashboard.png');
/** Generous: a loaded two-core machine runs the sample app, Redis and Chromium at once. */
const UI_TIMEOUT = 30_000;

/**
 * The dashboard in a real headless Chromium, served by the sample orders service: orders schedule
 * `order.expire` jobs that appear on the page; paying for a sold-out item makes its `order.fulfil`
 * job fail into the dead letters; after a restock the operator clicks Retry and the counts change.
 */
describe('dashboard in a browser, on the sample app (e2e)', () => {
  let app: INestApplication;
  let base: string;
  let browser: Browser;
  let page: Page;
  const held: LockHandle[] = [];

  beforeAll(async () => {
    const executablePath = chromiumPath();
    mkdirSync(ARTIFACTS, { recursive: true });
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({
          port: 0,
          redisUrl: testRedisUrl(),
          databaseUrl: undefined,
          orderExpiryMs: 3_600_000, // orders stay pending: their expiry jobs stay scheduled
          keyPrefix: uniquePrefix('ui'),
          dashboardHistory: { sampleMs: 500, windowMs: 30_000 },
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(UI_TIMEOUT);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(held.map((lock) => lock.release().catch(() => undefined)));
    await browser?.close();
    await app?.close();
  });

  const call = (method: string, path: string, body?: unknown) => httpJson(base, method, path, body);
  const count = (topic: string, state: string): Locator => page.locator(`tr[data-topic="${topic}"] td[data-col="${state}"]`);
  /** Waits until the locator's text satisfies `ok` (the page refreshes itself every few seconds). */
  const waitForText = async (locator: Locator, ok: (text: string) => boolean, what: string) => {
    let text = '';
    const read = async () => {
      text = ((await locator.count()) > 0 ? await locator.first().textContent() : '') ?? '';
      return ok(text);
    };
    if (await holdsWithin(read, UI_TIMEOUT, { every: 200 })) return text;
    await page.screenshot({ path: join(ARTIFACTS, 'timeout.png'), fullPage: true });
    throw new Error(
      `timed out waiting for ${what}; last text ${JSON.stringify(text)} (screenshot in test-artifacts/dashboard/timeout.png)`,
    );
  };

  it('shows scheduled jobs and held locks, and retries a dead job from the page', async () => {
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });

    const response = await page.goto(`${base}/dashboard`);
    expect(response?.status()).toBe(200);
    await page.locator('#status', { hasText: 'updated' }).waitFor();

    // Orders schedule their expiry: the topic and its jobs appear.
    const orders: Array<{ id: string }> = [];
    for (const item of ['concert ticket', 'hotel room', 'train seat']) orders.push((await call('POST', '/orders', { item })).body);
    await waitForText(count('order.expire', 'scheduled'), (t) => Number(t) >= 3, 'three scheduled order.expire jobs');
    await page.locator('tr[data-topic="order.expire"] [data-testid="topic-link"]').click();
    await page.locator('[data-state="scheduled"]').click();
    await page.locator(`tr[data-job-id="${orders[0].id}"]`).waitFor();
    await page.locator(`tr[data-job-id="${orders[0].id}"] [data-action="inspect"]`).click();
    await waitForText(page.locator('[data-testid="payload"]'), (t) => t.includes(orders[0].id), 'the payload in the inspector');
    await page.screenshot({ path: join(ARTIFACTS, '1-payload.png') });
    await page.locator('#inspect-close').click();

    // Locks held right now, as the service would hold them: an order's mutex and export permits.
    const locks = app.get(LockService);
    held.push(await locks.acquire(`order:${orders[1].id}`, { leaseTime: 120_000 }));
    const exportsSemaphore = locks.semaphore('report-exports', 3);
    held.push(await exportsSemaphore.acquire({ leaseTime: 90_000 }), await exportsSemaphore.acquire({ leaseTime: 90_000 }));
    const lockRow = page.locator(`tr[data-lock="order:${orders[1].id}"]`);
    await waitForText(
      lockRow,
      (t) => t.includes('mutex') && t.includes(held[0].fencingToken),
      'the held order lock with its fencing token',
    );
    await waitForText(page.locator('tr[data-lock="report-exports"]'), (t) => t.includes('semaphore'), 'the semaphore');

    // A few paid orders of untracked items: their fulfilment runs at once (plots get lateness and throughput).
    for (const order of orders.slice(1)) await call('POST', `/orders/${order.id}/pay`);

    // Paying for a sold-out item: its reserve step fails three times and lands in the dead letters.
    await call('PUT', '/items/gift-card', { stock: 0 });
    const gift = (await call('POST', '/orders', { item: 'gift-card' })).body;
    expect((await call('POST', `/orders/${gift.id}/pay`)).status).toBe(200);
    await waitForText(count('order.fulfil', 'dead'), (t) => t === '1', 'one dead order.fulfil job');
    await page.locator('tr[data-topic="order.fulfil"] [data-testid="topic-link"]').click();
    await page.locator('[data-state="dead"]').click();
    const deadRow = page.locator(`tr[data-job-id="fulfil:${gift.id}:reserve"]`);
    await waitForText(deadRow, (t) => t.includes('sold out') && t.includes('3/3'), 'the dead job with its error');
    // The service's scheduled work: its repeatable job with the next tick, and its leader election won by this (only) instance.
    const snapshot = page.locator('tr[data-schedule="reports.stock-snapshot/reports.stock-snapshot"]');
    await waitForText(
      snapshot.locator('td[data-col="schedule"]'),
      (t) => t.startsWith('every '),
      'the repeatable job in the schedules panel',
    );
    await waitForText(snapshot.locator('td[data-col="next"]'), (t) => /\d/.test(t), 'the next run of the repeatable job');
    await waitForText(
      page.locator('tr[data-election="reports.leader"] td[data-col="owner"]'),
      (t) => t.includes('this instance'),
      'this instance leading reports.leader',
    );
    await waitForText(
      page.locator('[data-testid="one-instance-table"] tbody'),
      (t) => t.includes('No @OnOneInstance method'),
      'the empty @OnOneInstance panel',
    );
    await page.waitForTimeout(1_500); // let the plots collect a few more samples for the picture
    await page.screenshot({ path: join(ARTIFACTS, '2-dead-letter.png'), fullPage: true });
    await page.screenshot({ path: DOCS_IMAGE, fullPage: true });

    // The operator restocks, then retries from the page: the job runs and the dead count drops.
    await call('PUT', '/items/gift-card', { stock: 2 });
    await deadRow.locator('[data-action="retry"]').click();
    await waitForText(count('order.fulfil', 'dead'), (t) => t === '0', 'the dead count back to 0');
    await page.locator('#toast', { hasText: 'Requeued' }).waitFor({ state: 'attached' });
    let item: { sold?: number } = {};
    await holdsWithin(
      async () => {
        item = (await call('GET', '/items/gift-card')).body;
        return item.sold === 1;
      },
      UI_TIMEOUT,
      { every: 100 },
    );
    expect(item).toMatchObject({ sold: 1, stock: 1 });
    await page.screenshot({ path: join(ARTIFACTS, '3-after-retry.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });
});

/**
 * A page of another site, opened in the same browser as the operator, against an application that
 * allows credentialed CORS from any origin: the browser sends the action header and the cookies,
 * and the dashboard must still refuse (Origin and Sec-Fetch-Site say where the request came from).
 */
describe('dashboard in a browser: a page of another site (e2e)', () => {
  let t: DashboardTestApp;
  let evil: Server;
  let browser: Browser;

  beforeAll(async () => {
    const executablePath = chromiumPath();
    t = await startDashboardApp(
      { readOnly: false, history: { sampleMs: 0 } },
      { handlers: false, cors: { origin: true, credentials: true } },
    );
    // Served from http://localhost:<port>: another site than the dashboard's http://127.0.0.1:<port>.
    evil = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>prize</title>'));
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    // A beforeAll that failed before listening leaves no server: `evil?.close(resolve)` would never resolve.
    if (evil) await new Promise((resolve) => evil.close(resolve));
    await t?.close();
  });

  it('cannot cancel a job nor read payloads, though CORS lets it send the header with credentials', async () => {
    const queue = t.app.get(DelayQueueService);
    await queue.schedule('xsite.orders', { card: '4111-secret' }, { id: 'victim', delay: 3_600_000 });
    const page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT);
    await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
    const api = `${t.base}/_locks/api/topics/xsite.orders/jobs`;
    const outcome = await page.evaluate(async (url) => {
      const cancel = await fetch(`${url}/victim/cancel`, {
        method: 'POST',
        credentials: 'include',
        headers: { 'x-redis-lock-dashboard': '1' },
      });
      const read = await fetch(`${url}?state=scheduled`, { credentials: 'include' });
      return { cancel: cancel.status, read: read.status, readBody: await read.text() };
    }, api);
    expect(outcome.cancel).toBe(403);
    expect(outcome.read).toBe(403);
    expect(outcome.readBody).not.toContain('4111-secret');
    expect((await queue.get('xsite.orders', 'victim'))?.state).toBe('scheduled');
    await page.close();
  });
});

/**
 * The job features of issue 37 as an operator sees them: a topic held by a handler's
 * `JobRateLimitedError` carries a "rate limited until" tag; a job's row shows its priority and its
 * dedupe key, and the inspector both.
 */
describe('dashboard in a browser: priorities, dedupe and a rate-limited topic (e2e)', () => {
  let t: DashboardTestApp;
  let browser: Browser;

  beforeAll(async () => {
    const executablePath = chromiumPath();
    t = await startDashboardApp({ history: { sampleMs: 0 } }, { handlers: false });
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('tags a rate-limited topic with the end of its block, and job rows with their priority and dedupe', async () => {
    const queue = t.app.get(DelayQueueService);
    const limited = new Promise<JobRateLimitedEvent>((resolve) => t.app.get(RedisLockEvents).on('job.rate-limited', resolve));
    const consumer = queue.consume('ui.limited', () => {
      throw new JobRateLimitedError(3_600_000);
    });
    await queue.schedule('ui.limited', { call: 'api' });
    const { blockedUntilMs } = await within(limited, UI_TIMEOUT, 'the rate-limited run');
    await consumer.close();
    await queue.schedule('ui.prio', { n: 1 }, { id: 'urgent', priority: 3, delay: 3_600_000 });
    await queue.schedule('ui.prio', { n: 2 }, { id: 'plain', delay: 3_600_000 });
    await queue.schedule('ui.prio', { n: 3 }, { dedupe: { key: 'product:7', ttl: 60_000 }, delay: 3_600_000 });

    const pageErrors: string[] = [];
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(UI_TIMEOUT);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${t.base}/_locks`);
    const tag = page.locator('tr[data-topic="ui.limited"] [data-testid="rate-limited"]');
    await tag.waitFor();
    expect(await tag.textContent()).toBe(
      'rate limited until ' + (await page.evaluate((ms) => new Date(ms).toLocaleTimeString(), blockedUntilMs)),
    );
    expect(await tag.getAttribute('title')).toContain(new Date(blockedUntilMs).toISOString());
    expect(await page.locator('tr[data-topic="ui.prio"] [data-testid="rate-limited"]').count()).toBe(0);

    await page.locator('tr[data-topic="ui.prio"] [data-testid="topic-link"]').click();
    await page.locator('[data-state="scheduled"]').click();
    await page.locator('tr[data-job-id="urgent"]').waitFor();
    expect(await page.locator('tr[data-job-id="urgent"] [data-testid="priority"]').textContent()).toBe('priority 3');
    expect(await page.locator('tr[data-job-id="plain"] [data-testid="priority"]').count()).toBe(0);
    expect(await page.locator('tr[data-job-id="plain"] [data-testid="dedupe"]').count()).toBe(0);
    expect(await page.locator('[data-testid="dedupe"]').allTextContents()).toEqual(['throttle product:7 (1 min)']);

    await page.locator('tr[data-job-id="urgent"] [data-action="inspect"]').click();
    await page.locator('#inspect-meta', { hasText: 'priority 3' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, '4-priority-and-rate-limit.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
