import { createHash } from 'node:crypto';
import { text as dashboardPageHtml } from './dashboard-page.html.embedded.js';

/*
 * The dashboard page is one static HTML document, dashboard-page.html beside this module (embedded
 * as dashboard-page.html.embedded.ts by tools/embed-assets.js), with its
 * CSS and script inline: no CDN, no build step. Every value from Redis reaches the DOM through
 * textContent (never innerHTML), and the Content Security Policy allows exactly the page's one
 * script and one stylesheet (by hash) and requests to the page's own origin, so a payload crafted as
 * HTML cannot run in an operator's browser. The API is found relative to the page's own URL, so a
 * global prefix or a proxy path just works.
 */

/** The whole page. */
export const DASHBOARD_PAGE_HTML = dashboardPageHtml;

/** Allows the page's own script and stylesheet (by hash) and requests to its own origin, nothing else. */
export const DASHBOARD_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(onlyInline('script'))}`,
  `style-src ${sha256(onlyInline('style'))}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The text of the page's single `<tag>…</tag>` element; the CSP hashes exactly this text. */
function onlyInline(tag: 'script' | 'style'): string {
  const elements = [...DASHBOARD_PAGE_HTML.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))];
  if (elements.length !== 1) {
    throw new Error(`dashboard-page.html must hold exactly one inline <${tag}> (found ${elements.length}): the CSP allows one by hash`);
  }
  return elements[0][1];
}

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}
