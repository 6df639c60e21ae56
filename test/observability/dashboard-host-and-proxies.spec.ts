import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { request as httpRequest } from 'node:http';
import { RedisLockDashboardModule, type RedisLockDashboardOptions } from 'nestjs-redis-lock/dashboard';
import { DelayQueueService, InvalidOptionsError } from '../../lib/index.js';
import { useDashboardApps } from '../fixtures/dashboard-app.js';

const ACTION = { 'x-redis-lock-dashboard': '1' };

/**
 * One request to 127.0.0.1 with the headers given verbatim, `Host` included (fetch would set its
 * own): what a browser sends after a page rebound its name to 127.0.0.1, or a proxy on this host.
 */
function send(base: string, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: url.port, method, path, headers, setHost: headers.host === undefined }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: any = text;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          // the page's HTML
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * docs/observability.md, "Security": while the dashboard serves loopback clients only, the TCP peer
 * is not enough. A page rebound to 127.0.0.1 reaches it from the operator's browser with a foreign
 * `Host`, and a proxy on the same host makes every client's peer 127.0.0.1.
 */
describe('RedisLockDashboardModule: loopback-only means a loopback Host and no proxy', () => {
  const start = useDashboardApps({ handlers: false });

  it('refuses a DNS-rebinding page: a foreign Host cannot read a payload, list locks nor cancel a job', async () => {
    const t = await start({ readOnly: false });
    const queue = t.app.get(DelayQueueService);
    await queue.schedule('rebind.t', { resetToken: 'secret-123' }, { id: 'victim', delay: 3_600_000 });
    const rebound = reboundPageHeaders(t.base);

    for (const path of ['/_locks', '/_locks/api/topics/rebind.t/jobs/victim', '/_locks/api/locks', '/_locks/api/topics']) {
      const read = await send(t.base, 'GET', path, rebound);
      expect(read.status).toBe(403);
      expect(read.body).toMatchObject({
        code: 'DASHBOARD_FOREIGN_HOST',
        message: expect.stringMatching(/rebind\.attacker\.test.*allowedOrigins/),
      });
      expect(JSON.stringify(read.body)).not.toContain('secret-123');
    }
    const cancel = await send(t.base, 'POST', '/_locks/api/topics/rebind.t/jobs/victim/cancel', { ...rebound, ...ACTION });
    expect(cancel.status).toBe(403);
    expect((await queue.get('rebind.t', 'victim'))?.state).toBe('scheduled');
  });

  it('serves localhost, 127.0.0.0/8 and [::1] with any port, and a Host listed in allowedOrigins', async () => {
    const t = await start({ allowedOrigins: ['http://ops.internal:8080'] });
    const port = new URL(t.base).port;
    for (const host of [
      `localhost:${port}`,
      'LOCALHOST',
      `127.0.0.1:${port}`,
      '127.0.0.2',
      `127.255.1.9:1`,
      `[::1]:${port}`,
      '[::1]',
      'ops.internal:8080',
    ]) {
      expect({ host, status: (await send(t.base, 'GET', '/_locks/api/topics', { host })).status }).toEqual({ host, status: 200 });
    }
    for (const host of [
      'ops.internal',
      'ops.internal:8081',
      'localhost.attacker.test',
      '127.0.0.1.nip.io',
      '0.0.0.0',
      '[::2]',
      '10.0.0.1',
      `evil.test:${port}`,
    ]) {
      const refused = await send(t.base, 'GET', '/_locks/api/topics', { host });
      expect({ host, status: refused.status, code: refused.body?.code }).toEqual({ host, status: 403, code: 'DASHBOARD_FOREIGN_HOST' });
    }
  });

  it('with allowRemote: true, serves only the listed hosts: a DNS-rebinding page can neither read a payload nor cancel a job', async () => {
    // The review's repro: allowRemote: true had no Host check, and the Origin check compared Origin with the attacker's own Host.
    for (const listing of [
      { allowedOrigins: ['https://ops.example.com'] },
      { allowedHosts: ['ops.example.com'] },
    ] as RedisLockDashboardOptions[]) {
      const t = await start({ readOnly: false, allowRemote: true, ...listing });
      const queue = t.app.get(DelayQueueService);
      await queue.schedule('rebind.t', { resetToken: 'secret-123' }, { id: 'victim', delay: 3_600_000 });
      const rebound = reboundPageHeaders(t.base);
      for (const path of ['/_locks', '/_locks/api/topics/rebind.t/jobs/victim', '/_locks/api/locks']) {
        const read = await send(t.base, 'GET', path, rebound);
        expect({ listing, path, status: read.status, code: read.body?.code }).toEqual({
          listing,
          path,
          status: 403,
          code: 'DASHBOARD_FOREIGN_HOST',
        });
        expect(read.body.message).toMatch(/rebind\.attacker\.test.*allowedHosts/);
        expect(JSON.stringify(read.body)).not.toContain('secret-123');
      }
      const cancel = await send(t.base, 'POST', '/_locks/api/topics/rebind.t/jobs/victim/cancel', { ...rebound, ...ACTION });
      expect(cancel.status).toBe(403);
      expect((await queue.get('rebind.t', 'victim'))?.state).toBe('scheduled');
      // The listed name (any port for allowedHosts) and loopback names are served.
      const listed = listing.allowedHosts ? ['ops.example.com', 'OPS.example.com:8443'] : ['ops.example.com', 'ops.example.com:443'];
      const port = new URL(t.base).port;
      for (const host of [...listed, `localhost:${port}`, `127.0.0.1:${port}`]) {
        expect({ host, status: (await send(t.base, 'GET', '/_locks/api/topics', { host })).status }).toEqual({ host, status: 200 });
      }
    }
  });

  it('allowedHosts: a leading dot serves the name and its subdomains; a guard with allowedHosts has the Host check too', async () => {
    const t = await start({ canActivate: () => true, allowedHosts: ['.ops.example.com', '[2001:db8::1]'] });
    for (const host of ['ops.example.com', 'eu.ops.example.com:8080', '[2001:db8::1]:3000', 'localhost']) {
      expect({ host, status: (await send(t.base, 'GET', '/_locks/api/topics', { host })).status }).toEqual({ host, status: 200 });
    }
    for (const host of ['evilops.example.com', 'ops.example.com.attacker.test', 'example.com', '[2001:db8::2]']) {
      const refused = await send(t.base, 'GET', '/_locks/api/topics', { host });
      expect({ host, status: refused.status, code: refused.body?.code }).toEqual({ host, status: 403, code: 'DASHBOARD_FOREIGN_HOST' });
    }
  });

  it('refuses allowRemote: true without guards nor a host list at forRoot, naming allowedHosts', () => {
    expect(() => RedisLockDashboardModule.forRoot({ allowRemote: true })).toThrow(InvalidOptionsError);
    expect(() => RedisLockDashboardModule.forRoot({ allowRemote: true, readOnly: false })).toThrow(/allowRemote.*allowedHosts/s);
    expect(() => RedisLockDashboardModule.forRoot({ allowRemote: true, allowedHosts: true })).not.toThrow();
    // Any Host on a loopback-only dashboard: exactly what DNS rebinding needs.
    expect(() => RedisLockDashboardModule.forRoot({ allowedHosts: true })).toThrow(/allowedHosts.*rebinds/s);
    expect(() => RedisLockDashboardModule.forRoot({ readOnly: false, allowedHosts: true })).toThrow(InvalidOptionsError);
    for (const entry of [
      'https://ops.example.com',
      'ops.example.com:8080',
      'ops.example.com.',
      '*.example.com',
      'ops example',
      '',
      'a/b',
      '[nothex]',
      '.',
    ]) {
      expect(() => RedisLockDashboardModule.forRoot({ allowedHosts: [entry] })).toThrow(/allowedHosts/);
    }
    expect(() => RedisLockDashboardModule.forRoot({ allowedHosts: 'ops.example.com' as never })).toThrow(/allowedHosts/);
  });

  it('with only guards, leaves Host to them and says so once at bootstrap; allowedHosts: true keeps quiet', async () => {
    const warnings: string[] = [];
    const spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    try {
      const t = await start({ canActivate: () => true });
      expect((await send(t.base, 'GET', '/_locks/api/topics', { host: 'dashboard.example.com' })).status).toBe(200);
      expect(warnings.filter((w) => /any Host/.test(w))).toEqual([expect.stringMatching(/DNS rebinding.*credential.*allowedHosts/s)]);
      warnings.length = 0;
      const quiet = await start({ canActivate: () => true, allowedHosts: true });
      expect((await send(quiet.base, 'GET', '/_locks/api/topics', { host: 'dashboard.example.com' })).status).toBe(200);
      expect(warnings.filter((w) => /any Host/.test(w))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });

  it('refuses every sign of forwarding through a proxy the application does not trust', async () => {
    const t = await start({});
    const port = new URL(t.base).port;
    const signs: Array<Record<string, string>> = [
      { via: '1.1 nginx' },
      { 'x-forwarded-proto': 'https' },
      { 'x-forwarded-host': 'ops.example.com' },
      { 'x-forwarded-port': '443' },
      { 'x-forwarded-server': 'edge' },
      { 'cf-connecting-ip': '203.0.113.7' },
      { 'true-client-ip': '203.0.113.7' },
      { 'fastly-client-ip': '203.0.113.7' },
      { 'x-client-ip': '203.0.113.7' },
      { 'x-cluster-client-ip': '203.0.113.7' },
      { 'x-original-forwarded-for': '203.0.113.7' },
      { 'x-azure-clientip': '203.0.113.7' },
      { 'x-appengine-user-ip': '203.0.113.7' },
    ];
    for (const sign of signs) {
      const refused = await send(t.base, 'GET', '/_locks/api/topics', { host: `127.0.0.1:${port}`, ...sign });
      expect({ sign, status: refused.status, code: refused.body?.code }).toEqual({ sign, status: 403, code: 'DASHBOARD_REMOTE_CLIENT' });
      expect(refused.body.message).toMatch(/trust proxy/);
    }
  });

  it(
    'behind a trusted proxy, serves only what it reports as a loopback client, and refuses what it forwards ' + 'without saying for whom',
    async () => {
      const t = await start({}, { trustProxy: 'loopback' });
      const port = new URL(t.base).port;
      const host = `127.0.0.1:${port}`;
      const local = { host, 'x-forwarded-proto': 'https', 'x-forwarded-for': '127.0.0.1' };
      expect((await send(t.base, 'GET', '/_locks/api/topics', local)).status).toBe(200);
      // A proxy that names its client in X-Real-IP (or only adds Via) passes the client's own
      // X-Forwarded-For through: a loopback client it reports proves nothing.
      for (const other of [{ via: '1.1 nginx' }, { 'x-real-ip': '203.0.113.9' }] as Array<Record<string, string>>) {
        expect(await send(t.base, 'GET', '/_locks/api/topics', { ...local, ...other })).toMatchObject({
          status: 403,
          body: { code: 'DASHBOARD_REMOTE_CLIENT' },
        });
      }
      const remote = await send(t.base, 'GET', '/_locks/api/topics', { ...local, 'x-forwarded-for': '203.0.113.7' });
      expect(remote).toMatchObject({ status: 403, body: { code: 'DASHBOARD_REMOTE_CLIENT' } });
      const unsaidSigns: Array<Record<string, string>> = [
        { via: '1.1 nginx' },
        { 'cf-connecting-ip': '203.0.113.7' },
        { 'x-forwarded-proto': 'https' },
      ];
      for (const sign of unsaidSigns) {
        const unsaid = await send(t.base, 'GET', '/_locks/api/topics', { host, ...sign });
        expect({ sign, status: unsaid.status, code: unsaid.body?.code }).toEqual({ sign, status: 403, code: 'DASHBOARD_REMOTE_CLIENT' });
      }
      // A public name forwarded in Host by a trusted proxy is still a foreign Host.
      const publicHost = await send(t.base, 'GET', '/_locks/api/topics', { ...local, host: 'ops.example.com' });
      expect(publicHost).toMatchObject({ status: 403, body: { code: 'DASHBOARD_FOREIGN_HOST' } });
    },
  );
});

/** What a page on a name rebound to 127.0.0.1 sends: a foreign Host (and Origin), same-origin by the browser's reckoning. */
function reboundPageHeaders(base: string): Record<string, string> {
  const port = new URL(base).port;
  return { host: `rebind.attacker.test:${port}`, origin: `http://rebind.attacker.test:${port}`, 'sec-fetch-site': 'same-origin' };
}
