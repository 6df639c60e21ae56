import { isIP, isIPv4 } from 'node:net';

/*
 * The dashboard's request checks as pure functions of what a request carries, so they can be read
 * (and tested) apart from any HTTP platform. The guards in dashboard-access.guard.ts feed them from
 * Express or Fastify requests.
 */

/**
 * Headers by which a proxy, load balancer or CDN says it forwarded a request (any `X-Forwarded-*`
 * too). A client that sends one of its own choosing gains nothing: such a request is only ever
 * refused (see `remoteClientRefusal`).
 */
const FORWARDING_HEADERS: ReadonlySet<string> = new Set([
  'forwarded',
  'via',
  'x-real-ip',
  'x-client-ip',
  'x-cluster-client-ip',
  'x-original-forwarded-for',
  'x-proxyuser-ip',
  'x-envoy-external-address',
  'x-azure-clientip',
  'x-azure-socketip',
  'x-appengine-user-ip',
  'cf-connecting-ip',
  'cf-connecting-ipv6',
  'true-client-ip',
  'fastly-client-ip',
  'akamai-client-ip',
  'cdn-loop',
]);

/**
 * The first header of `headers` (lower-case names, as Node gives them) that says a proxy forwarded
 * the request, if any; with `besidesXForwarded`, the first that is not an `X-Forwarded-*` header.
 */
export function forwardingHeaderOf(headers: Record<string, unknown>, besidesXForwarded = false): string | undefined {
  for (const name of Object.keys(headers)) {
    if (headers[name] === undefined) continue;
    const lower = name.toLowerCase();
    if (FORWARDING_HEADERS.has(lower) || (!besidesXForwarded && lower.startsWith('x-forwarded-'))) return lower;
  }
  return undefined;
}

/** What the loopback check looks at in one request. */
export interface ClientFacts {
  /** The TCP peer: `request.socket.remoteAddress`. */
  readonly socketAddress: string | undefined;
  /** The platform's client address (`request.ip`), which follows `X-Forwarded-For` only through proxies the application trusts. */
  readonly ip: string | undefined;
  /**
   * The platform's forwarded chain (`request.ips`), filled only when the application trusts the
   * proxy that sent the request (Express `trust proxy`, Fastify `trustProxy`). Express leaves the
   * socket's address out (`[]` when nothing was forwarded); Fastify puts it first (`[socket]` when
   * nothing was forwarded): see `ipsStartWithSocket`.
   */
  readonly ips: readonly string[] | undefined;
  /** True when `ips` starts with the socket's own address (Fastify's `request.ips`), false for Express's. */
  readonly ipsStartWithSocket: boolean;
  /** True when the request carries `X-Forwarded-For`. */
  readonly forwardedFor: boolean;
  /** The first forwarding header the request carries (`forwardingHeaderOf`), if any. */
  readonly forwardedBy: string | undefined;
  /** The first forwarding header the request carries besides `X-Forwarded-*` (X-Real-IP, Via, a CDN's…), if any. */
  readonly forwardedOtherwise?: string;
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
 * Why a client is not a loopback client, or undefined when it is. The TCP peer must be loopback in
 * every case. Behind a proxy the application trusts that named the client in `X-Forwarded-For`
 * (the platform took an address from it into `ips`), the client is the platform's `ip`, the one
 * that proxy reports. Otherwise any
 * sign of forwarding refuses the request: behind a proxy on the same host every client's TCP peer
 * is the loopback address, and a proxy that names its client in another header than
 * `X-Forwarded-For` (or in none) cannot be told from the client itself.
 */
export function remoteClientRefusal(facts: ClientFacts): string | undefined {
  const peer = facts.socketAddress ?? facts.ip;
  if (!isLoopbackAddress(peer)) return `it came from ${peer ?? 'an unknown address'}`;
  // Through a trusted proxy only when it said for whom (X-Forwarded-For) and the platform took at
  // least one address from it: Fastify's `ips` always holds the socket's address, so its length
  // alone would make every request look forwarded and every other sign of forwarding ignored.
  const reported = (facts.ips?.length ?? 0) - (facts.ipsStartWithSocket ? 1 : 0);
  const throughTrustedProxy = facts.forwardedFor && reported > 0;
  if (throughTrustedProxy) {
    if (!isLoopbackAddress(facts.ip)) return `it came from ${facts.ip ?? 'an unknown address'} (as reported by a trusted proxy)`;
    // A proxy that names its client in another header (X-Real-IP) or only adds Via passes the
    // client's own X-Forwarded-For through: a loopback client it reports then proves nothing.
    if (facts.forwardedOtherwise !== undefined) {
      return (
        `a trusted proxy reported a loopback client, but the request also carries ${facts.forwardedOtherwise}: the client may have ` +
        'sent that X-Forwarded-For itself (the proxy must overwrite X-Forwarded-For)'
      );
    }
    return undefined;
  }
  if (facts.forwardedBy !== undefined) {
    return (
      `it carries ${facts.forwardedBy}, so a proxy forwarded it, and no proxy the application trusts said for which ` +
      "client in X-Forwarded-For (Express: app.set('trust proxy', 'loopback'); Fastify: trustProxy; the proxy must " +
      'then set X-Forwarded-For)'
    );
  }
  return undefined;
}

/**
 * The `Host`s a dashboard answers besides loopback names (`localhost`, 127.0.0.0/8, `[::1]`, any
 * port, always answered: no other site's page can make a browser send them).
 */
export interface HostAllowList {
  /** `allowedHosts` entries without a leading dot, lower-case (`ops.example.com`, `[2001:db8::1]`): that name, any port. */
  readonly names: ReadonlySet<string>;
  /** `allowedHosts` entries with a leading dot, lower-case (`.example.com`): `example.com` and every name under it, any port. */
  readonly suffixes: readonly string[];
  /** Canonical `allowedOrigins` entries: the origin's host with its port (the scheme's default port written or not). */
  readonly origins: ReadonlySet<string>;
}

const HOST_HEADER = /^(?:(\[[0-9a-f:.]+\])|([a-z0-9.-]+))(?::(\d{1,5}))?$/;
/** An `allowedHosts` entry: a DNS name (optionally with a leading dot) or a bracketed IPv6 address, no port. */
const HOST_ENTRY = /^(?:\.?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/;

/**
 * The canonical (lower-case) form of an `allowedHosts` entry, or undefined when it is not a host
 * name as a `Host` header carries it without its port: `'ops.example.com'`, `'.example.com'` (the
 * name and its subdomains), `'10.0.0.5'`, `'[2001:db8::1]'`.
 */
export function canonicalHostEntry(entry: unknown): string | undefined {
  if (typeof entry !== 'string') return undefined;
  const lower = entry.toLowerCase();
  if (!HOST_ENTRY.test(lower)) return undefined;
  if (lower.startsWith('[') && !isIP(lower.slice(1, -1))) return undefined;
  return lower;
}

/**
 * Why a `Host` header is not one the dashboard answers, or undefined when it is: `localhost`, a
 * 127.0.0.0/8 address or `[::1]`, with any port, or a host of `allowed` (see `HostAllowList`). A
 * page that rebinds its own name to the dashboard's address (DNS rebinding) makes the operator's
 * browser send its name here, so neither the TCP peer nor an `Origin` equal to `Host` shows that
 * the request is the operator's. A request without `Host` (HTTP/1.0) comes from no browser and passes.
 */
export function foreignHostRefusal(host: string | undefined, allowed: HostAllowList): string | undefined {
  if (host === undefined) return undefined;
  const wanted = host.toLowerCase();
  const match = HOST_HEADER.exec(wanted);
  if (match) {
    const name = match[1] ?? match[2];
    const loopbackName =
      name === 'localhost' || (match[1] !== undefined ? isLoopbackAddress(name.slice(1, -1)) : isIPv4(name) && name.startsWith('127.'));
    if (loopbackName) return undefined;
    if (allowed.names.has(name)) return undefined;
    if (allowed.suffixes.some((suffix) => name.endsWith(suffix) || name === suffix.slice(1))) return undefined;
  }
  for (const entry of allowed.origins) {
    if (isOwnHost(new URL(entry), wanted)) return undefined;
  }
  return (
    `it was addressed to ${JSON.stringify(host)}, not to localhost, 127.0.0.0/8, [::1] nor a host listed ` +
    `in allowedHosts or allowedOrigins`
  );
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
