import { ForbiddenException, type ExecutionContext } from '@nestjs/common';
import { DashboardLoopbackGuard } from '../../../../lib/observability/dashboard/dashboard-loopback.guard.js';
import {
  canonicalHostEntry,
  canonicalOrigin,
  crossOriginRefusal,
  foreignHostRefusal,
  forwardingHeaderOf,
  isLoopbackAddress,
  remoteClientRefusal,
  type ClientFacts,
  type HostAllowList,
} from '../../../../lib/observability/dashboard/dashboard-request-policy.js';

/*
 * The dashboard's decisions about who sent a request, on the facts Express and Fastify give about
 * it. The HTTP specs (test/observability/dashboard-safety.spec.ts) cover what a test machine can
 * produce; a client on another host cannot be, so its cases are here.
 */

describe('isLoopbackAddress', () => {
  it.each(['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '::FFFF:127.0.0.9', '0:0:0:0:0:0:0:1'])(
    'counts %s as loopback',
    (address) => {
      expect(isLoopbackAddress(address)).toBe(true);
    },
  );

  it.each([
    '10.0.0.8',
    '192.168.1.20',
    '203.0.113.7',
    '::ffff:10.0.0.8',
    'fe80::1',
    '::',
    '0.0.0.0',
    '128.0.0.1',
    'localhost',
    '',
    undefined,
  ])('counts %s as remote', (address) => {
    expect(isLoopbackAddress(address)).toBe(false);
  });
});

describe('remoteClientRefusal', () => {
  const direct = (socketAddress: string | undefined, extra: Partial<ClientFacts> = {}): ClientFacts => ({
    socketAddress,
    ip: socketAddress,
    ips: [],
    ipsStartWithSocket: false,
    forwardedFor: false,
    forwardedBy: undefined,
    ...extra,
  });

  it('serves a loopback peer that no proxy forwarded', () => {
    expect(remoteClientRefusal(direct('127.0.0.1'))).toBeUndefined();
    expect(remoteClientRefusal(direct('::1', { ips: undefined }))).toBeUndefined(); // Fastify without trustProxy
  });

  it('refuses a peer on another host, naming its address', () => {
    expect(remoteClientRefusal(direct('10.0.0.8'))).toMatch(/10\.0\.0\.8/);
    expect(remoteClientRefusal(direct('::ffff:192.168.1.20'))).toMatch(/192\.168\.1\.20/);
    expect(remoteClientRefusal(direct(undefined, { ip: undefined }))).toMatch(/unknown address/);
  });

  it('refuses a loopback peer forwarding for someone when the application does not trust it', () => {
    expect(remoteClientRefusal(direct('127.0.0.1', { forwardedFor: true, forwardedBy: 'x-forwarded-for' }))).toMatch(/trust proxy/);
  });

  const express = { ipsStartWithSocket: false, forwardedFor: true, forwardedBy: 'x-forwarded-for' };
  const fastify = { ipsStartWithSocket: true, forwardedFor: true, forwardedBy: 'x-forwarded-for' };

  it('judges the client a trusted proxy reports, not the proxy', () => {
    // Express with trust proxy: ips lists the forwarded chain (the socket's address left out), ip is the client.
    expect(remoteClientRefusal({ socketAddress: '127.0.0.1', ip: '203.0.113.7', ips: ['203.0.113.7'], ...express })).toMatch(
      /203\.0\.113\.7.*trusted proxy/,
    );
    expect(remoteClientRefusal({ socketAddress: '127.0.0.1', ip: '127.0.0.1', ips: ['127.0.0.1'], ...express })).toBeUndefined();
    // Fastify with trustProxy: ips starts with the socket's address.
    expect(remoteClientRefusal({ socketAddress: '127.0.0.1', ip: '203.0.113.7', ips: ['127.0.0.1', '203.0.113.7'], ...fastify })).toMatch(
      /203\.0\.113\.7.*trusted proxy/,
    );
    expect(
      remoteClientRefusal({ socketAddress: '127.0.0.1', ip: '127.0.0.1', ips: ['127.0.0.1', '127.0.0.1'], ...fastify }),
    ).toBeUndefined();
  });

  it(
    'refuses a loopback client reported by a trusted proxy that also names a client otherwise (X-Real-IP, ' +
      'Via, a CDN header): the client may have sent that X-Forwarded-For itself',
    () => {
      for (const [platform, shape, ips] of [
        ['express', express, ['127.0.0.1']],
        ['fastify', fastify, ['127.0.0.1', '127.0.0.1']],
      ] as const) {
        for (const sign of ['x-real-ip', 'via', 'cf-connecting-ip', 'forwarded']) {
          const facts = { socketAddress: '127.0.0.1', ip: '127.0.0.1', ips: [...ips], ...shape, forwardedOtherwise: sign };
          expect({ platform, sign, refusal: remoteClientRefusal(facts) }).toEqual({
            platform,
            sign,
            refusal: expect.stringMatching(/overwrite X-Forwarded-For/),
          });
        }
      }
      expect(forwardingHeaderOf({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'https' }, true)).toBeUndefined();
      expect(forwardingHeaderOf({ 'x-forwarded-for': '127.0.0.1', 'X-Real-IP': '203.0.113.9' }, true)).toBe('x-real-ip');
    },
  );

  it('refuses a proxy on another host whatever client it reports: `trust proxy: true` would believe any client', () => {
    expect(remoteClientRefusal({ socketAddress: '10.0.0.2', ip: '127.0.0.1', ips: ['10.0.0.2', '127.0.0.1'], ...fastify })).toMatch(
      /10\.0\.0\.2/,
    );
  });

  it(
    'behind a trusted proxy that did not send X-Forwarded-For, refuses every other sign of forwarding ' +
      '(Fastify: ips holds the socket alone)',
    () => {
      for (const sign of ['via', 'x-real-ip', 'cf-connecting-ip', 'forwarded', 'x-forwarded-proto']) {
        // Fastify with trustProxy and no X-Forwarded-For: ips is [socket], ip the socket.
        const facts = {
          socketAddress: '127.0.0.1',
          ip: '127.0.0.1',
          ips: ['127.0.0.1'],
          ipsStartWithSocket: true,
          forwardedFor: false,
          forwardedBy: sign,
        };
        expect({ sign, refusal: remoteClientRefusal(facts) }).toEqual({ sign, refusal: expect.stringMatching(/trust proxy/) });
        // Express with trust proxy and no X-Forwarded-For: ips is [].
        expect(remoteClientRefusal({ ...facts, ips: [], ipsStartWithSocket: false })).toMatch(/trust proxy/);
      }
    },
  );

  it('refuses a remote peer whatever forwarding header it sends when its proxy is not trusted', () => {
    expect(remoteClientRefusal({ socketAddress: '203.0.113.7', ip: '203.0.113.7', ips: [], ...express })).toMatch(/203\.0\.113\.7/);
  });
});

describe('crossOriginRefusal', () => {
  const none = new Set<string>();
  const host = '127.0.0.1:3000';

  it('passes a client that is not a browser acting for a page (no Origin, no Sec-Fetch-Site)', () => {
    expect(crossOriginRefusal({ origin: undefined, secFetchSite: undefined, host }, none)).toBeUndefined();
  });

  it("passes the dashboard's own page and an address typed by the operator", () => {
    expect(crossOriginRefusal({ origin: 'http://127.0.0.1:3000', secFetchSite: 'same-origin', host }, none)).toBeUndefined();
    expect(crossOriginRefusal({ origin: undefined, secFetchSite: 'same-origin', host }, none)).toBeUndefined(); // same-origin GET
    expect(crossOriginRefusal({ origin: undefined, secFetchSite: 'none', host }, none)).toBeUndefined();
    expect(
      crossOriginRefusal({ origin: 'https://ops.example.com', secFetchSite: undefined, host: 'ops.example.com:443' }, none),
    ).toBeUndefined();
    expect(
      crossOriginRefusal({ origin: 'http://OPS.example.com', secFetchSite: undefined, host: 'ops.example.com' }, none),
    ).toBeUndefined();
  });

  it('refuses a page of another site or another origin of the same site', () => {
    expect(crossOriginRefusal({ origin: 'https://evil.example', secFetchSite: 'cross-site', host }, none)).toMatch(/cross-site/);
    expect(crossOriginRefusal({ origin: undefined, secFetchSite: 'cross-site', host }, none)).toMatch(/another site/);
    expect(crossOriginRefusal({ origin: 'https://blog.example.com', secFetchSite: 'same-site', host: 'ops.example.com' }, none)).toMatch(
      /same site/,
    );
  });

  it('refuses an Origin that is not the request host, even without Sec-Fetch-Site (older browsers)', () => {
    expect(crossOriginRefusal({ origin: 'https://evil.example', secFetchSite: undefined, host }, none)).toMatch(/evil\.example/);
    expect(crossOriginRefusal({ origin: 'http://127.0.0.1:3001', secFetchSite: undefined, host }, none)).toBeDefined(); // another port
    expect(crossOriginRefusal({ origin: 'http://127.0.0.1:3000', secFetchSite: undefined, host: undefined }, none)).toBeDefined();
  });

  it('refuses an opaque origin (a sandboxed frame or a redirect that hid it)', () => {
    expect(crossOriginRefusal({ origin: 'null', secFetchSite: undefined, host }, none)).toMatch(/null/);
  });

  it('passes an origin listed in allowedOrigins, whatever Sec-Fetch-Site says, and no look-alike', () => {
    const allowed = new Set([canonicalOrigin('https://ops.example.com')!]);
    expect(crossOriginRefusal({ origin: 'https://ops.example.com', secFetchSite: 'cross-site', host }, allowed)).toBeUndefined();
    expect(crossOriginRefusal({ origin: 'https://ops.example.com.evil.example', secFetchSite: 'cross-site', host }, allowed)).toBeDefined();
    expect(crossOriginRefusal({ origin: 'http://ops.example.com', secFetchSite: 'cross-site', host }, allowed)).toBeDefined(); // another scheme
  });
});

describe('canonicalOrigin', () => {
  it('takes an origin as browsers send it, in canonical form', () => {
    expect(canonicalOrigin('https://OPS.example.com/')).toBe('https://ops.example.com');
    expect(canonicalOrigin('https://ops.example.com:443')).toBe('https://ops.example.com');
    expect(canonicalOrigin('http://localhost:8080')).toBe('http://localhost:8080');
  });

  it.each([
    'ops.example.com',
    'https://ops.example.com/admin',
    'https://u:p@ops.example.com',
    'https://ops.example.com?x=1',
    'null',
    'file:///x',
    42,
  ])('refuses %p', (entry) => {
    expect(canonicalOrigin(entry)).toBeUndefined();
  });
});

describe('foreignHostRefusal', () => {
  const allowed: HostAllowList = {
    names: new Set(),
    suffixes: [],
    origins: new Set(['http://ops.internal:8080', 'https://tunnel.example']),
  };

  it.each(['localhost', 'localhost:3000', 'LocalHost:1', '127.0.0.1', '127.0.0.1:3000', '127.9.8.7:80', '[::1]', '[::1]:3000', undefined])(
    'serves Host %s',
    (host) => {
      expect(foreignHostRefusal(host, allowed)).toBeUndefined();
    },
  );

  it.each(['ops.internal:8080', 'tunnel.example', 'tunnel.example:443'])('serves %s, the host of an allowedOrigins entry', (host) => {
    expect(foreignHostRefusal(host, allowed)).toBeUndefined();
  });

  it.each([
    '',
    'rebind.attacker.test',
    'localhost.',
    'localhost.attacker.test',
    '127.0.0.1.nip.io',
    '127.1',
    '0.0.0.0',
    '[::]',
    '[::2]:3000',
    'ops.internal',
    'tunnel.example:8443',
    'localhost:3000@evil',
    'localhost:99999999',
    'localhost, evil.test',
    '2130706433',
    '0x7f000001',
  ])('refuses Host %j', (host) => {
    expect(foreignHostRefusal(host, allowed)).toMatch(/not to localhost/);
  });
});

describe('forwardingHeaderOf', () => {
  it.each([
    'via',
    'forwarded',
    'x-forwarded-for',
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-real-ip',
    'cf-connecting-ip',
    'true-client-ip',
    'fastly-client-ip',
    'cdn-loop',
  ])('counts %s as a sign of forwarding', (name) => {
    expect(forwardingHeaderOf({ host: 'localhost', [name]: 'x' })).toBe(name);
  });

  it("finds none in a browser's own headers", () => {
    expect(
      forwardingHeaderOf({ host: 'localhost', origin: 'http://localhost', 'sec-fetch-site': 'same-origin', cookie: 'a=b' }),
    ).toBeUndefined();
  });
});

describe('foreignHostRefusal with allowedHosts', () => {
  const allowed: HostAllowList = { names: new Set(['ops.example.com', '[2001:db8::1]']), suffixes: ['.corp.example'], origins: new Set() };

  it.each(['ops.example.com', 'OPS.example.com:8443', '[2001:db8::1]:80', 'corp.example', 'eu.corp.example:3000', 'localhost:1'])(
    'serves %s',
    (host) => {
      expect(foreignHostRefusal(host, allowed)).toBeUndefined();
    },
  );

  it.each([
    'rebind.attacker.test',
    'ops.example.com.attacker.test',
    'xops.example.com',
    'evilcorp.example',
    'corp.example.attacker.test',
    '[2001:db8::2]',
  ])('refuses %s', (host) => {
    expect(foreignHostRefusal(host, allowed)).toMatch(/allowedHosts/);
  });
});

describe('canonicalHostEntry', () => {
  it.each([
    ['ops.example.com', 'ops.example.com'],
    ['OPS.Example.com', 'ops.example.com'],
    ['.example.com', '.example.com'],
    ['10.0.0.5', '10.0.0.5'],
    ['[2001:DB8::1]', '[2001:db8::1]'],
  ])('accepts %s as %s', (entry, canonical) => {
    expect(canonicalHostEntry(entry)).toBe(canonical);
  });

  it.each([
    'https://ops.example.com',
    'ops.example.com:8080',
    'ops.example.com.',
    '*.example.com',
    '.',
    '',
    'a b',
    '[zz::1]',
    '2001:db8::1',
    'ops_x.example',
    7,
  ])('refuses %p', (entry) => {
    expect(canonicalHostEntry(entry)).toBeUndefined();
  });
});

/**
 * Fastify is not a dependency of this project, so its request is built here as `FastifyRequest`
 * has it with `trustProxy` (fastify/lib/request.js): `ips` is proxy-addr's `all()`, which starts
 * with the socket's address, and `ip` its last entry; Node's request is `raw`.
 */
describe('DashboardLoopbackGuard on a Fastify request (trustProxy)', () => {
  const fastifyRequest = (headers: Record<string, string>, forwardedFor: string[] = []) => {
    const socket = { remoteAddress: '127.0.0.1' };
    const ips = ['127.0.0.1', ...[...forwardedFor].reverse()];
    const raw = { socket, headers };
    return { raw, headers, socket, ip: ips[ips.length - 1], ips };
  };
  const decide = (request: object): { status: number; code?: string } => {
    const context = { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
    try {
      new DashboardLoopbackGuard().canActivate(context);
      return { status: 200 };
    } catch (error) {
      return {
        status: (error as ForbiddenException).getStatus(),
        code: ((error as ForbiddenException).getResponse() as { code: string }).code,
      };
    }
  };

  it('refuses every sign of forwarding but a loopback X-Forwarded-For, as on Express', () => {
    const signs: Array<Record<string, string>> = [
      { via: '1.1 nginx' },
      { 'x-real-ip': '203.0.113.9' },
      { 'cf-connecting-ip': '203.0.113.9' },
      { forwarded: 'for=203.0.113.9' },
      { 'x-forwarded-proto': 'https' },
    ];
    for (const sign of signs) {
      expect({ sign, ...decide(fastifyRequest({ host: '127.0.0.1:3000', ...sign })) }).toEqual({
        sign,
        status: 403,
        code: 'DASHBOARD_REMOTE_CLIENT',
      });
    }
    expect(decide(fastifyRequest({ host: '127.0.0.1:3000', 'x-forwarded-for': '203.0.113.9' }, ['203.0.113.9']))).toEqual({
      status: 403,
      code: 'DASHBOARD_REMOTE_CLIENT',
    });
    expect(
      decide(fastifyRequest({ host: '127.0.0.1:3000', 'x-forwarded-proto': 'https', 'x-forwarded-for': '127.0.0.1' }, ['127.0.0.1'])),
    ).toEqual({ status: 200 });
    // With Via (or X-Real-IP) beside it, that X-Forwarded-For may be the client's own, passed through.
    expect(decide(fastifyRequest({ host: '127.0.0.1:3000', via: '1.1 nginx', 'x-forwarded-for': '127.0.0.1' }, ['127.0.0.1']))).toEqual({
      status: 403,
      code: 'DASHBOARD_REMOTE_CLIENT',
    });
    expect(decide(fastifyRequest({ host: '127.0.0.1:3000' }))).toEqual({ status: 200 });
  });
});
