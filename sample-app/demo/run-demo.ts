/**
 * `npm run demo`: starts Redis (unless REDIS_URL is set) and the sample orders service, drives it
 * like clients would, then runs three instances of it to show scheduled work across instances
 * (scheduling-demo.ts), and prints what happened. Exits 0 when every claim of the report holds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { findFreePort, hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from 'nestjs-redis-lock/testing';
import { check, checks, note, step } from './demo-report.js';
import { demoScheduledWork } from './scheduling-demo.js';

const ORDER_EXPIRY_MS = 3_000;
const CONCURRENT_PAYS = 50;
const STOCK = 5;
const BUYERS = 40;
/** How long the demo's private Redis is down while an order is created (the outbox step). */
const REDIS_OUTAGE_MS = 3_000;
/** The embedded database (PGlite) takes seconds to start, and minutes on a machine busy with other work. */
const STARTUP_TIMEOUT_MS = 180_000;

async function main(): Promise<number> {
  let redis: LocalRedisServer | undefined;
  let app: ChildProcess | undefined;
  try {
    step('Starting Redis');
    let redisUrl = process.env.REDIS_URL;
    if (redisUrl) {
      note(`using REDIS_URL=${redisUrl}`);
    } else {
      if (!hasRedisServerBinary()) {
        console.error(
          'No REDIS_URL and no redis-server on PATH. Install it (`sudo apt-get install redis-server`, ' +
            '`brew install redis`) or set REDIS_URL=redis://host:port, then run `npm run demo` again.',
        );
        return 2;
      }
      redis = await startLocalRedisServer();
      redisUrl = redis.url;
      note(`started a private redis-server at ${redisUrl}`);
    }

    step('Starting the orders service (sample-app)');
    const port = await findFreePort();
    app = spawn(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.js')], {
      env: { ...process.env, REDIS_URL: redisUrl, PORT: String(port), ORDER_EXPIRY_MS: String(ORDER_EXPIRY_MS) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const appLog = captureLog(app);
    const base = `http://127.0.0.1:${port}`;
    await waitForHealth(base, app, appLog);
    const health = await api('GET', `${base}/health`);
    note(`up at ${base}: redis ${health.body.redis.status}, database ${health.body.database.kind}`);
    note(`dashboard: ${base}/dashboard (open it while the demo runs; \`npm run start:sample\` keeps one up)`);

    step(`Paying one order from ${CONCURRENT_PAYS} clients at once`);
    const order = (await api('POST', `${base}/orders`, { item: 'concert ticket' })).body;
    note(`created order ${order.id} (expires in ${ORDER_EXPIRY_MS / 1000} s unless paid)`);
    const pays = await Promise.all(Array.from({ length: CONCURRENT_PAYS }, () => api('POST', `${base}/orders/${order.id}/pay`)));
    const paid = pays.filter((r) => r.status === 200).length;
    const conflicts = pays.filter((r) => r.status === 409).length;
    const others = pays.length - paid - conflicts;
    note(`responses: ${paid} × 200, ${conflicts} × 409, ${others} other`);
    const afterPay = (await api('GET', `${base}/orders/${order.id}`)).body;
    check('exactly one pay succeeded', paid === 1 && others === 0, `${paid} succeeded, ${conflicts} got 409 Conflict`);
    check('the order was charged once', afterPay.status === 'paid' && afterPay.payments === 1, `status ${afterPay.status}, ${afterPay.payments} payment row(s)`);

    step('Letting an unpaid order expire');
    const unpaid = (await api('POST', `${base}/orders`, { item: 'hotel room' })).body;
    note(`created order ${unpaid.id}; waiting for its order.expire job…`);
    let expired = unpaid;
    const deadline = Date.now() + ORDER_EXPIRY_MS + 10_000;
    while (expired.status === 'pending' && Date.now() < deadline) {
      await sleep(100);
      expired = (await api('GET', `${base}/orders/${unpaid.id}`)).body;
    }
    // The paid order's expiry job has run by now too: it must have left the paid order alone.
    const paidLater = (await api('GET', `${base}/orders/${order.id}`)).body;
    const lateness = expired.expiredAt ? Date.parse(expired.expiredAt) - Date.parse(expired.expiresAt) : NaN;
    check(
      'the unpaid order expired on time',
      expired.status === 'expired' && lateness >= 0 && lateness < 2_000,
      expired.status === 'expired' ? `${lateness} ms after its due time (database clock)` : `still ${expired.status}`,
    );
    check('the paid order was not expired', paidLater.status === 'paid', `status ${paidLater.status}`);

    step(`Selling ${STOCK} limited items to ${BUYERS} buyers at once`);
    await api('PUT', `${base}/items/limited-edition`, { stock: STOCK });
    const purchases = await Promise.all(
      Array.from({ length: BUYERS }, (_, i) => api('POST', `${base}/items/limited-edition/purchase`, { buyer: `buyer-${i}` })),
    );
    const bought = purchases.filter((r) => r.status === 200).length;
    const soldOut = purchases.filter((r) => r.status === 409).length;
    const item = (await api('GET', `${base}/items/limited-edition`)).body;
    note(`responses: ${bought} × 200, ${soldOut} × 409 sold out`);
    check('stock never went negative', item.stock === 0 && bought === STOCK && item.sold === STOCK, `${item.sold} sold, ${item.stock} left`);

    step('Fulfilling an order of a sold-out item, then retrying it from the dashboard');
    await api('PUT', `${base}/items/gift-card`, { stock: 0 });
    const giftOrder = (await api('POST', `${base}/orders`, { item: 'gift-card' })).body;
    await api('POST', `${base}/orders/${giftOrder.id}/pay`);
    const jobId = `fulfil:${giftOrder.id}`;
    note(`paid order ${giftOrder.id}; its order.fulfil job finds gift-card sold out and retries with backoff…`);
    const dashboard = `${base}/dashboard/api`;
    const deadJob = await poll(async () => {
      const dead = (await api('GET', `${dashboard}/topics/order.fulfil/jobs?state=dead`)).body;
      return dead.jobs?.find((j: { id: string }) => j.id === jobId);
    }, 15_000);
    check(
      'the failing job reached the dead letters after its attempts',
      deadJob !== undefined && deadJob.attempts === 3,
      deadJob ? `${deadJob.attempts} attempts, last error "${deadJob.lastError}"` : 'not dead within 15 s',
    );
    await api('PUT', `${base}/items/gift-card`, { stock: 3 });
    const retry = await api('POST', `${dashboard}/topics/order.fulfil/jobs/${encodeURIComponent(jobId)}/retry`, undefined, {
      'x-redis-lock-dashboard': '1',
    });
    note(`restocked gift-card; POST …/dashboard/api/topics/order.fulfil/jobs/${jobId}/retry → ${retry.status}`);
    const giftCard = await poll(async () => {
      const current = (await api('GET', `${base}/items/gift-card`)).body;
      return current.sold === 1 ? current : undefined;
    }, 15_000);
    const deadAfter = (await api('GET', `${dashboard}/topics`)).body.topics.find((t: { topic: string }) => t.topic === 'order.fulfil');
    check(
      'the retried job reserved the item and left the dead letters',
      retry.status === 200 && giftCard?.sold === 1 && deadAfter?.dead === 0,
      `sold ${giftCard?.sold ?? 0}, ${giftCard?.stock ?? '?'} left, ${deadAfter?.dead ?? '?'} dead`,
    );

    if (redis) {
      step('Creating an order while Redis is down');
      const restarted = redis.restart({ downtimeMs: REDIS_OUTAGE_MS });
      await sleep(300);
      const createdAt = Date.now();
      const during = await api('POST', `${base}/orders`, { item: 'umbrella' });
      note(
        `Redis killed (SIGKILL, its data gone) for ${REDIS_OUTAGE_MS / 1000} s; POST /orders → ${during.status} in ${Date.now() - createdAt} ms: ` +
          'the order and its order.expire job committed together (the job in the outbox table)',
      );
      await restarted;
      note('Redis is back; waiting for the order to expire…');
      let current = during.body;
      const outageDeadline = Date.now() + ORDER_EXPIRY_MS + 15_000;
      while (during.status === 201 && current.status === 'pending' && Date.now() < outageDeadline) {
        await sleep(100);
        current = (await api('GET', `${base}/orders/${during.body.id}`)).body;
      }
      const late = current.expiredAt ? Date.parse(current.expiredAt) - Date.parse(current.expiresAt) : NaN;
      check(
        'an order created while Redis was down still expires',
        during.status === 201 && current.status === 'expired',
        current.status === 'expired' ? `expired ${late} ms after its due time` : `status ${current.status}`,
      );
    } else {
      note('skipping the Redis outage step: REDIS_URL is set, and the demo stops only a Redis it started');
    }

    step('Stopping the service');
    await stopProcess(app);
    app = undefined;
    note('service drained and stopped');

    await demoScheduledWork(redisUrl);
  } catch (error) {
    check('the demo ran to the end', false, error instanceof Error ? error.message : String(error));
  } finally {
    if (app) await stopProcess(app);
    await redis?.stop();
  }

  const failed = checks.filter((c) => !c.ok);
  console.log('\n──────── Report ────────');
  for (const c of checks) console.log(`${c.ok ? 'PASS' : 'FAIL'}  ${c.claim}: ${c.detail}`);
  console.log(failed.length === 0 ? '\nAll claims hold.' : `\n${failed.length} claim(s) failed.`);
  return failed.length === 0 ? 0 : 1;
}

interface ApiResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

async function api(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Calls `probe` every 100 ms until it returns a value, or gives up after `timeoutMs`. */
async function poll<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  return undefined;
}

function captureLog(child: ChildProcess): () => string {
  let log = '';
  child.stdout?.on('data', (c: Buffer) => (log += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  return () => log;
}

async function waitForHealth(base: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with code ${child.exitCode}:\n${log()}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`the service did not become healthy within ${STARTUP_TIMEOUT_MS / 1000} s:\n${log()}`);
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
