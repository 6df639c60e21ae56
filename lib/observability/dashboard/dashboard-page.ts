import { createHash } from 'node:crypto';

/*
 * The dashboard page: one HTML document with its CSS and script inline, no CDN and no build step.
 * Every value from Redis reaches the DOM through textContent (never innerHTML), and the Content
 * Security Policy allows exactly this script and this stylesheet (by hash) and requests to the
 * page's own origin, so a payload crafted as HTML cannot run in an operator's browser.
 * The API is found relative to the page's own URL, so a global prefix or a proxy path just works.
 */

const STYLE = `
:root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --muted:#6b7385; --line:#e3e6ec; --accent:#2f6fde;
  --ok:#1f9d55; --warn:#d97706; --bad:#d33a3a; --mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
* { box-sizing:border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--ink); background:var(--bg); }
header { display:flex; align-items:center; gap:12px; padding:12px 20px; background:#141a26; color:#fff; }
header h1 { font-size:16px; margin:0; font-weight:600; }
header .sp { flex:1; }
.badge { font-size:12px; padding:2px 8px; border-radius:10px; background:#2b3447; color:#cfd6e4; }
.badge.ro { background:#6b4e00; color:#ffe7a3; }
#status { font-size:12px; color:#aab3c5; }
#status.err { color:#ff9b9b; }
header label { font-size:12px; color:#cfd6e4; }
main { padding:16px 20px 40px; max-width:1400px; margin:0 auto; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 16px; margin-bottom:16px; }
h2 { font-size:14px; margin:0 0 10px; font-weight:600; }
h2 small { color:var(--muted); font-weight:400; margin-left:6px; }
.charts { display:grid; grid-template-columns:repeat(auto-fit,minmax(300px,1fr)); gap:16px; background:none; border:0; padding:0; }
.chart { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
.chart h3 { font-size:13px; margin:0 0 4px; font-weight:600; }
.chart svg { width:100%; height:140px; display:block; }
.legend { font-size:11px; color:var(--muted); display:flex; flex-wrap:wrap; gap:4px 12px; min-height:16px; }
.legend i { display:inline-block; width:10px; height:3px; margin-right:4px; vertical-align:middle; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; color:var(--muted); font-weight:600; }
td.n, th.n { text-align:right; font-variant-numeric:tabular-nums; }
tr.sel td { background:#eef3fd; }
tbody tr:hover td { background:#f7f9fc; }
.mono { font-family:var(--mono); font-size:12px; word-break:break-all; }
.muted { color:var(--muted); }
.dead { color:var(--bad); font-weight:600; }
.due { color:var(--warn); font-weight:600; }
.empty { color:var(--muted); padding:10px 8px; }
button { font:inherit; font-size:12px; padding:3px 9px; border-radius:5px; border:1px solid var(--line); background:#fff; color:var(--ink); cursor:pointer; margin:0 4px 2px 0; }
button:hover { border-color:var(--accent); color:var(--accent); }
button.danger:hover { border-color:var(--bad); color:var(--bad); }
button.link { border:0; background:none; padding:0; color:var(--accent); font-weight:600; }
.tabs { display:flex; gap:6px; margin-bottom:10px; align-items:center; flex-wrap:wrap; }
.tabs button.on { background:var(--accent); color:#fff; border-color:var(--accent); }
.tabs .sp { flex:1; }
.err-text { color:var(--bad); font-size:12px; }
.preview { max-width:420px; }
dialog { border:1px solid var(--line); border-radius:8px; padding:0; width:min(760px,92vw); }
dialog header { background:#141a26; }
dialog pre { margin:0; padding:14px 16px; max-height:65vh; overflow:auto; font-family:var(--mono); font-size:12px; background:#fbfcfd; }
dialog .meta { padding:10px 16px; font-size:12px; color:var(--muted); border-bottom:1px solid var(--line); }
#toast { position:fixed; right:20px; bottom:20px; background:#141a26; color:#fff; padding:10px 14px; border-radius:6px; font-size:13px; opacity:0; transition:opacity .2s; pointer-events:none; }
#toast.show { opacity:1; }
`;

const SCRIPT = `
(() => {
  'use strict';
  const base = location.pathname.replace(/\\/+$/, '');
  const $ = (id) => document.getElementById(id);
  const COLORS = ['#2f6fde', '#d97706', '#1f9d55', '#9b51e0', '#d33a3a', '#0e9fb0', '#7a8599'];
  const STATES = ['due', 'scheduled', 'active', 'dead'];
  let meta = null;
  let selected = null;
  let state = 'due';
  let timer = null;
  let busy = false;
  let again = false;

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = String(v);
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, String(v));
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }
  const svg = (tag, attrs) => {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    return node;
  };

  async function request(method, path) {
    const headers = { accept: 'application/json' };
    if (method !== 'GET') headers[meta.actionHeader] = '1';
    const response = await fetch(base + '/api' + path, { method, headers, credentials: 'same-origin' });
    const text = await response.text();
    let body;
    try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
    if (!response.ok) {
      const message = body && body.message ? (Array.isArray(body.message) ? body.message.join('; ') : body.message) : text;
      throw new Error(response.status + ' ' + (message || response.statusText));
    }
    return body;
  }
  const enc = encodeURIComponent;

  function duration(ms) {
    const a = Math.abs(ms);
    if (a < 1000) return Math.round(a) + ' ms';
    if (a < 60000) return (a / 1000).toFixed(a < 10000 ? 1 : 0) + ' s';
    if (a < 3600000) return Math.round(a / 60000) + ' min';
    if (a < 86400000) return (a / 3600000).toFixed(1) + ' h';
    return (a / 86400000).toFixed(1) + ' d';
  }
  const relative = (t, now) => (t >= now ? 'in ' + duration(t - now) : duration(now - t) + ' ago');
  const clock = (t) => new Date(t).toLocaleTimeString();

  let toastTimer = null;
  function toast(text) {
    const node = $('toast');
    node.textContent = text;
    node.classList.add('show');
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => node.classList.remove('show'), 2500);
  }

  function renderTopics(data) {
    const body = $('topics-body');
    body.replaceChildren();
    if (data.topics.length === 0) {
      body.append(el('tr', {}, el('td', { colspan: 6, class: 'empty', text: 'No topics yet. Jobs appear here once something is scheduled.' })));
    }
    for (const t of data.topics) {
      const row = el('tr', { 'data-topic': t.topic, class: t.topic === selected ? 'sel' : '' },
        el('td', {}, el('button', { class: 'link', 'data-testid': 'topic-link', text: t.topic, onclick: () => select(t.topic) })),
        el('td', { class: 'n', 'data-col': 'scheduled', text: t.scheduled }),
        el('td', { class: 'n' + (t.due > 0 ? ' due' : ''), 'data-col': 'due', text: t.due }),
        el('td', { class: 'n', 'data-col': 'active', text: t.active }),
        el('td', { class: 'n' + (t.dead > 0 ? ' dead' : ''), 'data-col': 'dead', text: t.dead }),
        el('td', { class: 'muted', text: t.handler ? 'this app' : '' }));
      body.append(row);
    }
    for (const e of data.errors) {
      body.append(el('tr', {}, el('td', { class: 'mono', text: e.topic }), el('td', { colspan: 5, class: 'err-text', text: e.message })));
    }
    const current = data.topics.find((t) => t.topic === selected);
    for (const s of STATES) {
      const tab = document.querySelector('[data-state="' + s + '"]');
      tab.textContent = s + (current ? ' (' + current[s] + ')' : '');
      tab.className = s === state ? 'on' : '';
    }
  }

  function select(topic) {
    selected = topic;
    localStorage.setItem('redis-lock-dashboard.topic', topic);
    $('jobs-section').hidden = false;
    $('jobs-topic').textContent = topic;
    refresh();
  }

  async function act(kind, job, confirmText) {
    if (confirmText && !confirm(confirmText)) return;
    try {
      const path = kind === 'retry-all' ? '/topics/' + enc(selected) + '/retry-dead'
        : '/topics/' + enc(selected) + '/jobs/' + enc(job.id) + '/' + kind;
      const result = await request('POST', path);
      toast(kind === 'retry-all' ? 'Requeued ' + result.retried + ' dead job(s)' : (kind === 'retry' ? 'Requeued ' : kind === 'delete' ? 'Deleted ' : 'Cancelled ') + job.id);
    } catch (error) {
      toast(error.message);
    }
    refresh();
  }

  async function inspect(job) {
    const dialog = $('inspect');
    $('inspect-title').textContent = selected + ' / ' + job.id;
    $('inspect-meta').textContent = 'loading…';
    $('inspect-body').textContent = '';
    dialog.showModal();
    try {
      const detail = await request('GET', '/topics/' + enc(selected) + '/jobs/' + enc(job.id));
      const facts = [detail.state, 'attempts ' + detail.attempts + (detail.maxAttempts ? '/' + detail.maxAttempts : ''),
        'created ' + new Date(detail.createdAt).toLocaleString()];
      if (detail.lastError) facts.push('last error: ' + detail.lastError);
      $('inspect-meta').textContent = facts.join(' · ');
      $('inspect-body').textContent = JSON.stringify(detail.payload, null, 2);
    } catch (error) {
      $('inspect-meta').textContent = error.message;
    }
  }

  function renderJobs(list) {
    const body = $('jobs-body');
    body.replaceChildren();
    $('retry-all').hidden = meta.readOnly || state !== 'dead' || list.total === 0;
    $('jobs-total').textContent = list.total > list.jobs.length ? 'showing ' + list.jobs.length + ' of ' + list.total : '';
    if (list.jobs.length === 0) {
      body.append(el('tr', {}, el('td', { colspan: 6, class: 'empty', text: 'No ' + state + ' jobs.' })));
      return;
    }
    for (const job of list.jobs) {
      const when = job.dueAt !== undefined ? 'due ' + relative(job.dueAt, list.now)
        : job.visibleUntil !== undefined ? 'visible until ' + relative(job.visibleUntil, list.now)
        : job.diedAt !== undefined ? 'died ' + relative(job.diedAt, list.now) : '';
      const actions = el('td', {}, el('button', { 'data-action': 'inspect', text: 'Inspect', onclick: () => inspect(job) }));
      if (!meta.readOnly && job.state === 'dead') {
        actions.append(el('button', { 'data-action': 'retry', text: 'Retry', onclick: () => act('retry', job) }));
        actions.append(el('button', { class: 'danger', 'data-action': 'delete', text: 'Delete',
          onclick: () => act('delete', job, 'Delete dead job ' + job.id + ' for good?') }));
      }
      if (!meta.readOnly && (job.state === 'due' || job.state === 'scheduled')) {
        actions.append(el('button', { class: 'danger', 'data-action': 'cancel', text: 'Cancel',
          onclick: () => act('cancel', job, 'Cancel job ' + job.id + '? It will not run.') }));
      }
      body.append(el('tr', { 'data-job-id': job.id },
        el('td', { class: 'mono', text: job.id }),
        el('td', { class: 'n', text: job.attempts + (job.maxAttempts ? '/' + job.maxAttempts : '') }),
        el('td', { text: when }),
        el('td', { class: 'err-text', text: job.lastError || '' }),
        el('td', { class: 'mono preview', text: job.payloadPreview }),
        actions));
    }
  }

  function renderLocks(data) {
    const body = $('locks-body');
    body.replaceChildren();
    $('locks-note').textContent = data.truncated ? '(more exist than are listed)' : data.locks.length + ' held';
    if (data.locks.length === 0) {
      body.append(el('tr', {}, el('td', { colspan: 6, class: 'empty', text: 'No lock is held right now.' })));
    }
    for (const lock of data.locks) {
      const owners = el('td', { class: 'mono' });
      for (const h of lock.holders) {
        const extra = [h.mode, h.count > 1 ? '×' + h.count : '', h.leaseMs !== undefined && lock.kind !== 'mutex' ? duration(h.leaseMs) + ' left' : '']
          .filter(Boolean).join(', ');
        owners.append(el('div', { text: h.owner + (extra ? ' (' + extra + ')' : '') }));
      }
      body.append(el('tr', { 'data-lock': lock.name },
        el('td', { text: lock.kind }),
        el('td', { class: 'mono', text: lock.name }),
        owners,
        el('td', { class: 'n mono', text: lock.fencingToken === null ? '–' : lock.fencingToken }),
        el('td', { class: 'n', text: lock.leaseMs < 0 ? 'no expiry' : duration(lock.leaseMs) }),
        el('td', { class: 'n', text: lock.waiting || '' })));
    }
  }

  function chart(id, series, unit) {
    const box = $(id);
    const node = box.querySelector('svg');
    const legend = box.querySelector('.legend');
    node.replaceChildren();
    legend.replaceChildren();
    // Drawn at the element's own pixel size, so text and strokes are never stretched.
    const W = Math.max(200, Math.round(node.clientWidth || 600)), H = 140, L = 44, R = 8, T = 8, B = 18;
    node.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const windowMs = meta.windowMs;
    const now = Date.now();
    const x0 = now - windowMs;
    let max = 0;
    for (const s of series) for (const [, v] of s.points) if (v !== null && v > max) max = v;
    const top = max <= 0 ? 1 : niceCeil(max);
    const x = (t) => L + ((t - x0) / windowMs) * (W - L - R);
    const y = (v) => T + (1 - v / top) * (H - T - B);
    for (const f of [0, 0.5, 1]) {
      node.append(svg('line', { x1: L, x2: W - R, y1: y(top * f), y2: y(top * f), stroke: '#e3e6ec', 'stroke-width': 1 }));
      const label = svg('text', { x: L - 6, y: y(top * f) + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#6b7385' });
      label.textContent = format(top * f) + (f === 1 && unit ? ' ' + unit : '');
      node.append(label);
    }
    const left = svg('text', { x: L, y: H - 4, 'font-size': 10, fill: '#6b7385' });
    left.textContent = '-' + duration(windowMs);
    const right = svg('text', { x: W - R, y: H - 4, 'font-size': 10, fill: '#6b7385', 'text-anchor': 'end' });
    right.textContent = 'now';
    node.append(left, right);
    let drawn = 0;
    series.forEach((s) => {
      let d = '';
      let pen = false;
      s.points.forEach(([t, v], i) => {
        if (t < x0 || v === null) { pen = false; return; }
        d += (pen ? 'L' : 'M') + x(t).toFixed(1) + ' ' + y(v).toFixed(1);
        const next = s.points[i + 1];
        // A value between two gaps (e.g. one interval with handler starts) would be an invisible line: a dot.
        if (!pen && (!next || next[1] === null)) node.append(svg('circle', { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 2.5, fill: s.color }));
        pen = true;
        drawn++;
      });
      if (d) node.append(svg('path', { d, fill: 'none', stroke: s.color, 'stroke-width': 2, 'stroke-linejoin': 'round', ...(s.dash ? { 'stroke-dasharray': s.dash } : {}) }));
      const key = el('span', { text: s.name });
      const swatch = el('i');
      swatch.style.background = s.color;
      key.prepend(swatch);
      legend.append(key);
    });
    if (drawn === 0) {
      const empty = svg('text', { x: (L + W) / 2, y: H / 2, 'text-anchor': 'middle', 'font-size': 12, fill: '#6b7385' });
      empty.textContent = meta.sampleMs > 0 ? 'collecting samples (every ' + duration(meta.sampleMs) + ')…' : 'sampling is off';
      node.append(empty);
    }
  }
  function niceCeil(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }
  const format = (v) => (v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 0 : 1) + 'k' : String(Math.round(v * 10) / 10));

  function renderHistory(history) {
    const samples = history.samples;
    const totals = new Map();
    for (const s of samples) for (const [topic, due] of Object.entries(s.due)) totals.set(topic, Math.max(totals.get(topic) || 0, due));
    const topics = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || a.localeCompare(b)).slice(0, 6);
    chart('chart-backlog', [...topics.map((topic, i) => ({
      name: topic, color: COLORS[i % (COLORS.length - 1)], points: samples.map((s) => [s.t, s.due[topic] === undefined ? null : s.due[topic]]),
    })), { name: 'dead, all topics', color: COLORS[6], dash: '4 3', points: samples.map((s) => [s.t, s.dead]) }], '');
    chart('chart-lateness', [
      { name: 'p50', color: COLORS[2], points: samples.map((s) => [s.t, s.latenessP50]) },
      { name: 'p95', color: COLORS[1], points: samples.map((s) => [s.t, s.latenessP95]) },
      { name: 'max', color: COLORS[4], points: samples.map((s) => [s.t, s.latenessMax]) },
    ], 'ms');
    chart('chart-throughput', [
      { name: 'succeeded', color: COLORS[2], points: samples.map((s) => [s.t, s.succeeded]) },
      { name: 'failed', color: COLORS[4], points: samples.map((s) => [s.t, s.failed]) },
    ], '');
  }

  async function refresh() {
    clearTimeout(timer);
    if (busy) { again = true; return; }
    busy = true;
    again = false;
    try {
      const [topics, locks, history, jobs] = await Promise.all([
        request('GET', '/topics'),
        request('GET', '/locks'),
        request('GET', '/history'),
        selected ? request('GET', '/topics/' + enc(selected) + '/jobs?state=' + state + '&limit=50') : null,
      ]);
      if (selected && !topics.topics.some((t) => t.topic === selected)) topics.topics.push({ topic: selected, scheduled: 0, due: 0, active: 0, dead: 0 });
      renderTopics(topics);
      renderLocks(locks);
      renderHistory(history);
      if (jobs) renderJobs(jobs);
      $('status').textContent = 'updated ' + clock(Date.now());
      $('status').className = '';
    } catch (error) {
      $('status').textContent = error.message;
      $('status').className = 'err';
    } finally {
      busy = false;
      if (again) refresh();
      else if (!$('pause').checked) timer = setTimeout(refresh, meta.refreshMs);
    }
  }

  async function start() {
    try {
      meta = await request('GET', '/meta');
    } catch (error) {
      $('status').textContent = error.message;
      $('status').className = 'err';
      return;
    }
    $('prefix').textContent = 'prefix ' + meta.keyPrefix;
    $('ro').hidden = !meta.readOnly;
    for (const s of STATES) {
      const tab = document.querySelector('[data-state="' + s + '"]');
      tab.addEventListener('click', () => { state = s; refresh(); });
    }
    $('retry-all').addEventListener('click', () => act('retry-all', null, 'Requeue every dead job of ' + selected + '?'));
    $('pause').addEventListener('change', () => { if (!$('pause').checked) refresh(); else clearTimeout(timer); });
    $('inspect-close').addEventListener('click', () => $('inspect').close());
    const remembered = localStorage.getItem('redis-lock-dashboard.topic');
    if (remembered) select(remembered); else refresh();
  }
  start();
})();
`;

const BODY = `
<header>
  <h1>Redis locks &amp; delayed jobs</h1>
  <span class="badge" id="prefix"></span>
  <span class="badge ro" id="ro" data-testid="read-only" hidden>read-only</span>
  <span class="sp"></span>
  <span id="status">loading…</span>
  <label><input type="checkbox" id="pause"> pause</label>
</header>
<main>
  <section class="charts">
    <div class="chart" id="chart-backlog"><h3>Backlog: due jobs per topic, and dead letters</h3><svg role="img" aria-label="backlog"></svg><div class="legend"></div></div>
    <div class="chart" id="chart-lateness"><h3>Lateness of handler starts (this instance)</h3><svg role="img" aria-label="lateness"></svg><div class="legend"></div></div>
    <div class="chart" id="chart-throughput"><h3>Jobs finished per sample (this instance)</h3><svg role="img" aria-label="throughput"></svg><div class="legend"></div></div>
  </section>
  <section>
    <h2>Topics</h2>
    <table data-testid="topics-table">
      <thead><tr><th>Topic</th><th class="n">Scheduled</th><th class="n">Due</th><th class="n">Active</th><th class="n">Dead</th><th>Handler</th></tr></thead>
      <tbody id="topics-body"></tbody>
    </table>
  </section>
  <section id="jobs-section" hidden>
    <h2>Jobs of <span class="mono" id="jobs-topic"></span> <small id="jobs-total"></small></h2>
    <div class="tabs">
      <button data-state="due">due</button><button data-state="scheduled">scheduled</button>
      <button data-state="active">active</button><button data-state="dead">dead</button>
      <span class="sp"></span>
      <button id="retry-all" data-action="retry-all" hidden>Retry all dead</button>
    </div>
    <table data-testid="jobs-table">
      <thead><tr><th>Id</th><th class="n">Attempts</th><th>When</th><th>Last error</th><th>Payload</th><th></th></tr></thead>
      <tbody id="jobs-body"></tbody>
    </table>
  </section>
  <section>
    <h2>Held locks <small id="locks-note"></small></h2>
    <table data-testid="locks-table">
      <thead><tr><th>Kind</th><th>Name</th><th>Owner(s)</th><th class="n">Fencing token</th><th class="n">Lease left</th><th class="n">Waiting</th></tr></thead>
      <tbody id="locks-body"></tbody>
    </table>
  </section>
</main>
<dialog id="inspect">
  <header><h1 id="inspect-title"></h1><span class="sp"></span><button id="inspect-close">Close</button></header>
  <div class="meta" id="inspect-meta"></div>
  <pre id="inspect-body" data-testid="payload"></pre>
</dialog>
<div id="toast" role="status"></div>
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** The whole page. */
export const DASHBOARD_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>Redis locks &amp; jobs</title>
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${SCRIPT}</script>
</body>
</html>
`;

/** Allows the page's own script and stylesheet (by hash) and requests to its own origin, nothing else. */
export const DASHBOARD_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
