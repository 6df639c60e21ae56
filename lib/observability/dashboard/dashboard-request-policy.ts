import { isIPv4 } from 'node:net';

/*
 * The dashboard's request checks as pure functions of what a request carries, so they can be read
 * (and tested) apart from any HTTP platform. The guards in dashboard-access.guard.ts feed them from
 * Express or Fastify requests.
 */

/** Headers a reverse proxy adds to say for whom it forwards a request. */
export const FORWARDING_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'] as const;

/** What the loopback check looks at in one request. */
export interface ClientFacts {
  /** The TCP peer: `request.socket.remoteAddress`. */
  readonly socketAddress: string | undefined;
  /** The platform's client address (`request.ip`), which follows `X-Forwarded-For` only through proxies the application trusts. */
  readonly ip: string | undefined;
  /**
   * The platform's forwarded chain (`request.ips`): non-empty only when the application trusts the
   * proxy that sent the request (Express `trust proxy`, Fastify `trustProxy`).
   */
  readonly ips: readonly string[] | undefined;
  /** True when the request carries `X-Forwarded-For`, `Forwarded` or `X-Real-IP`. */
  readonly forwarded: boolean;
}

/** True for 127.0.0.0/8, `::1` and their IPv4-mapped IPv6 forms. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (typeof address !== 'string' || address.length === 0) return false;
  let a = address.toLowerCase();
  if (a.startsWith('::ffff:')) a = a.slice('::ffff:'.length);
  if (isIPv4(a)) return a.startsWith('127.');
  return a === '::1' || a === '0:0:0:0:0:0:0:1';
}

/**
 * Why a client is not a loopback client, or undefined when it is. The client is the platform's
 * `ip` when the application trusts the proxy in front of it; a request that carries forwarding
 * headers through a proxy the application does not trust is refused, because behind a proxy on
 * the same host every client's TCP peer is the loopback address.
 */
export function remoteClientRefusal(facts: ClientFacts): string | undefined {
  const throughTrustedProxy = Array.isArray(facts.ips) && facts.ips.length > 0;
  if (throughTrustedProxy) {
    return isLoopbackAddress(facts.ip) ? undefined : `it came from ${facts.ip ?? 'an unknown address'} (as reported by a trusted proxy)`;
  }
  const peer = facts.socketAddress ?? facts.ip;
  if (!isLoopbackAddress(peer)) return `it came from ${peer ?? 'an unknown address'}`;
  if (facts.forwarded) {
    return (
      'it was forwarded by a proxy for another client (X-Forwarded-For, Forwarded or X-Real-IP) and the ' +
      "application does not trust that proxy (Express: app.set('trust proxy', 'loopback'); Fastify: trustProxy)"
    );
  }
  return undefined;
}

/** What the cross-site check looks at in one request. */
interface OriginFacts {
  /** The `Origin` header, if any (browsers send it on every POST and on cross-origin reads). */
  readonly origin: string | undefined;
  /** The `Sec-Fetch-Site` header, if any: 'same-origin', 'same-site', 'cross-site' or 'none'. */
  readonly secFetchSite: string | undefined;
  /** The `Host` header: the dashboard's own host as the browser addressed it. */
  readonly host: string | undefined;
}

/**
 * Why a request looks sent by a page of another origin, or undefined when it does not. A request
 * from an origin in `allowedOrigins` passes. Otherwise `Sec-Fetch-Site` must be absent,
 * 'same-origin' or 'none' (typed in the address bar), and `Origin`, when present, must be the
 * dashboard's own (`Host`); an opaque origin ('null') never is. A client that sends neither
 * header is not a browser acting for someone else (curl, a script) and passes.
 */
export function crossOriginRefusal(facts: OriginFacts, allowedOrigins: ReadonlySet<string>): string | undefined {
  const origin = facts.origin;
  const parsed = origin === undefined ? undefined : parseOrigin(origin);
  if (parsed && allowedOrigins.has(parsed.origin)) return undefined;
  const site = facts.secFetchSite?.toLowerCase();
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    const where = site === 'same-site' ? 'another origin of the same site' : 'another site';
    return `the browser says a page of ${where} sent it (Sec-Fetch-Site: ${site}${origin ? `, Origin: ${origin}` : ''})`;
  }
  if (origin !== undefined && !(parsed && isOwnHost(parsed, facts.host))) {
    return `a page of ${origin} sent it, not this dashboard's own page (Host: ${facts.host ?? 'none'})`;
  }
  return undefined;
}

/**
 * The canonical form of an `allowedOrigins` entry (`scheme://host[:port]` as browsers send it in
 * `Origin`), or undefined when the entry is not an http(s) origin without path, query or credentials.
 */
export function canonicalOrigin(entry: unknown): string | undefined {
  return typeof entry === 'string' ? parseOrigin(entry)?.origin : undefined;
}

/** An http(s) origin, or undefined for 'null', a URL with a path, query or credentials, or garbage. */
function parseOrigin(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const plain = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  return (url.protocol === 'http:' || url.protocol === 'https:') && plain ? url : undefined;
}

/** True when the origin's host (and port) is the one in the `Host` header the browser addressed. */
function isOwnHost(origin: URL, host: string | undefined): boolean {
  if (!host) return false;
  const wanted = host.toLowerCase();
  if (origin.host === wanted) return true;
  return origin.port === '' && wanted === `${origin.hostname}:${origin.protocol === 'https:' ? '443' : '80'}`;
}
