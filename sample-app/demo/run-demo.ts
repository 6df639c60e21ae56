/**
 * `npm run demo`: starts Redis (unless REDIS_URL is set) and the sample orders service, drives it
 * like clients would, then runs three instances of it to show scheduled work across instances
 * (scheduling-demo.ts), and prints what happened. Exits 0 when every claim of the report holds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { findFreePort, hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from 'nestjs-redis-lock/testing';
import { api, sleep } from './demo-http.js';
import { check, checks, note, step } from './demo-report.js';
import { findPostgresBin, startDemoPostgres, type DemoPostgres } from './demo-postgres.js';
import { demoSoldOutFulfilment } from './sold-out-demo.js';
import { demoThreeInstances } from './scheduling-demo.js';

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
  let postgres: DemoPostgres | undefined;
  try {
    step('Starting Redis');
    redis = process.env.REDIS_URL ? undefined : await startPrivateRedis();
    const redisUrl = process.env.REDIS_URL ?? redis?.url;
    if (!redisUrl) return 2;
    note(redis ? `started a private redis-server at ${redisUrl}` : `using REDIS_URL=${redisUrl}`);

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
    check(
      'the order was charged once',
      afterPay.status === 'paid' && afterPay.payments === 1,
      `status ${afterPay.status}, ${afterPay.payments} payment row(s)`,
    );

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
    check(
      'stock never went negative',
      item.stock === 0 && bought === STOCK && item.sold === STOCK,
      `${item.sold} sold, ${item.stock} left`,
    );

    await demoSoldOutFulfilment(base);

    if (redis) {
      step('Creating an order while Redis is down');
      const restarted = redis.restart({ downtimeMs: REDIS_OUTAGE_MS });
      await sleep(300);
      const createdAt = Date.now();
      const during = await api('POST', `${base}/orders`, { item: 'umbrella' });
      note(
        `Redis killed (SIGKILL, its data gone) for ${REDIS_OUTAGE_MS / 1000} s; POST /orders → ${during.status} ` +
          `in ${Date.now() - createdAt} ms: ` +
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

    // The three instances share one database: DATABASE_URL, else a private PostgreSQL if this machine has one.
    let sharedDatabase = process.env.DATABASE_URL;
    const postgresBin = sharedDatabase ? undefined : findPostgresBin();
    if (postgresBin) {
      step('Starting PostgreSQL for the three instances');
      postgres = await startDemoPostgres(postgresBin);
      sharedDatabase = postgres.url;
      note(`started a private PostgreSQL server at ${postgres.url} (from ${postgresBin})`);
    }
    await demoThreeInstances(redisUrl, sharedDatabase);
  } catch (error) {
    check('the demo ran to the end', false, error instanceof Error ? error.message : String(error));
  } finally {
    if (app) await stopProcess(app);
    await postgres?.stop();
    await redis?.stop();
  }

  const failed = checks.filter((c) => !c.ok);
  console.log('\n──────── Report ────────');
  for (const c of checks) console.log(`${c.ok ? 'PASS' : 'FAIL'}  ${c.claim}: ${c.detail}`);
  console.log(failed.length === 0 ? '\nAll claims hold.' : `\n${failed.length} claim(s) failed.`);
  return failed.length === 0 ? 0 : 1;
}

/** A redis-server of the demo's own, or undefined (after saying why) when there is none on PATH. */
async function startPrivateRedis(): Promise<LocalRedisServer | undefined> {
  if (!hasRedisServerBinary()) {
    console.error(
      'No REDIS_URL and no redis-server on PATH. Install it (`sudo apt-get install redis-server`, ' +
        '`brew install redis`) or set REDIS_URL=redis://host:port, then run `npm run demo` again.',
    );
    return undefined;
  }
  return startLocalRedisServer();
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

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
