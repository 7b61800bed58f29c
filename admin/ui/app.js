'use strict';
// edgeway dashboard. It reads the admin API (/api/...) with the session
// cookie and sends the session's CSRF token with every call that changes
// state. Data is written with textContent only, never as HTML. Every
// POLL_MS it refetches what the open page shows; routes only when the
// configuration's generation changes.

const POLL_MS = 3000;
const PAGE_ROWS = 50;

const $ = (sel) => document.querySelector(sel);
let csrf = '';

const st = {
  page: 'overview',
  config: null,
  overview: null,
  prevSample: null,
  routes: [],
  routesGen: -1,
  routeSamples: new Map(),
  upstreams: [],
  certs: null,
  lists: {},
};

// el builds an element: el('td', {class: 'num'}, 'text', child...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-') || k.startsWith('aria-')) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) {
    if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

async function api(method, url, body) {
  const opt = {method, headers: {}, credentials: 'same-origin', cache: 'no-store'};
  if (method !== 'GET') opt.headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) {
    opt.headers['Content-Type'] = 'application/json';
    opt.body = JSON.stringify(body);
  }
  const r = await fetch(url, opt);
  if (r.status === 401) {
    location.assign('/ui/login');
    throw new Error('not logged in');
  }
  let data = null;
  try { data = await r.json(); } catch (e) { /* no body */ }
  return {status: r.status, ok: r.ok, data};
}

function toast(msg, bad) {
  const t = $('#toast');
  t.textContent = msg;
  t.className = bad ? 'bad' : '';
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
}

function ago(iso) {
  const t = Date.parse(iso);
  if (!t || t < 0) return '';
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 90) return s + 's ago';
  if (s < 5400) return Math.round(s / 60) + 'm ago';
  if (s < 129600) return Math.round(s / 3600) + 'h ago';
  return Math.round(s / 86400) + 'd ago';
}

function timeCell(iso) {
  return el('td', {title: iso || ''}, ago(iso));
}

// ---- confirmation dialog -------------------------------------------------

// confirmAction shows the dialog; it resolves to true (the weight is
// then in #confirm-weight, when asked for one) or false. The dialog's
// close event comes a task after it closes, so one can arrive after the
// dialog was opened again: a close while open is that stale one, and a
// new question answers an old one still waiting with no.
let pendingConfirm = null;

function confirmAction(text, weight) {
  const d = $('#confirm');
  if (pendingConfirm) pendingConfirm(false);
  $('#confirm-text').textContent = text;
  $('#confirm-weight-label').hidden = weight === undefined;
  if (weight !== undefined) $('#confirm-weight').value = weight;
  d.returnValue = '';
  d.showModal();
  return new Promise((resolve) => { pendingConfirm = resolve; });
}

function onConfirmClose() {
  const d = $('#confirm');
  if (d.open || !pendingConfirm) return;
  const resolve = pendingConfirm;
  pendingConfirm = null;
  resolve(d.returnValue === 'ok');
}

// ---- paged, searchable lists ---------------------------------------------

// list keeps the search and page of one table; rows are [key, render].
function list(name, render, after) {
  const l = {name, filter: '', page: 0, rows: [], render, after};
  st.lists[name] = l;
  $(`#${name}-search`).addEventListener('input', (e) => { l.filter = e.target.value.trim().toLowerCase(); l.page = 0; draw(l); });
  $(`#${name}-prev`).addEventListener('click', () => { l.page--; draw(l); });
  $(`#${name}-next`).addEventListener('click', () => { l.page++; draw(l); });
  return l;
}

function draw(l) {
  const match = l.filter ? l.rows.filter((r) => r.key.includes(l.filter)) : l.rows;
  const pages = Math.max(1, Math.ceil(match.length / PAGE_ROWS));
  l.page = Math.min(Math.max(0, l.page), pages - 1);
  const slice = match.slice(l.page * PAGE_ROWS, (l.page + 1) * PAGE_ROWS);
  const frag = document.createDocumentFragment();
  for (const r of slice) frag.append(l.render(r.item));
  const tbody = $(`#${l.name}-table tbody`);
  tbody.replaceChildren(frag);
  tbody.dataset.total = String(match.length);
  $(`#${l.name}-count`).textContent = l.filter ? `${match.length} of ${l.rows.length}` : `${l.rows.length}`;
  $(`#${l.name}-pageno`).textContent = `page ${l.page + 1} of ${pages}`;
  $(`#${l.name}-prev`).disabled = l.page === 0;
  $(`#${l.name}-next`).disabled = l.page >= pages - 1;
  if (l.after) l.after();
}

// ---- overview --------------------------------------------------------------

function rate(cur, prev, field, dt) {
  return prev && dt > 0 ? (cur[field] - prev[field]) / dt : null;
}

function fmt(n, digits) {
  return n === null || n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits);
}

function renderOverview() {
  const o = st.overview;
  if (!o) return;
  const p = st.prevSample;
  const dt = p ? (Date.parse(o.time) - Date.parse(p.time)) / 1000 : 0;
  const rps = rate(o, p, 'requests_total', dt);
  const errs = rate(o, p, 'responses_5xx_total', dt);
  $('#ov-rps').textContent = fmt(rps, 1);
  $('#ov-err').textContent = rps ? fmt(100 * errs / rps, 2) + '%' : '–';
  $('#ov-refused').textContent = fmt(rate(o, p, 'refused_total', dt), 1);
  $('#ov-conns').textContent = String(o.connections);
  $('#ov-tunnels').textContent = String(o.tunnels_total);
  const rows = o.listeners.map((l) => el('tr', {},
    el('td', {}, l.name), el('td', {class: 'mono'}, l.addr), el('td', {}, l.protocols.join(' ')),
    el('td', {class: 'num'}, l.connections)));
  $('#ov-listeners tbody').replaceChildren(...rows);
  if (st.config) {
    $('#ov-gen').textContent = 'gen ' + st.config.generation;
    $('#ov-reload').replaceChildren(reloadSummary(st.config.last_reload));
  }
}

function reloadSummary(r, here) {
  if (!r) return el('span', {class: 'muted'}, 'No reload since start.');
  const what = r.ok ? el('span', {class: 'ok'}, 'applied') : el('span', {class: 'bad'}, 'refused');
  return el('span', {}, 'Last reload (', r.trigger, ', ', ago(r.time), '): ', what,
    r.ok ? '' : ` — ${(r.errors || []).length} error(s)${here ? '' : ', see Configuration'}`);
}

// ---- routes ----------------------------------------------------------------

function routeRow(r) {
  const stat = (name) => el('td', {class: 'num', 'data-stat': name}, '–');
  return el('tr', {'data-route': r.name},
    el('td', {}, r.name), el('td', {}, r.kind), el('td', {class: 'rule'}, r.rule),
    stat('rps'), stat('err'), stat('p50'), stat('p99'),
    el('td', {class: 'num'}, r.priority), el('td', {}, r.listeners.join(' ')),
    el('td', {}, r.upstream || el('span', {class: 'muted'}, 'answers itself')),
    el('td', {}, r.middlewares.join(' ')), el('td', {class: 'src'}, r.source));
}

// routeStats fetches the traffic of the routes on the page shown and
// fills their cells: rates and percentiles over the time since the
// previous reading of each route (at least a second).
async function routeStats() {
  const rows = [...document.querySelectorAll('#routes-table tbody tr[data-route]')];
  const http = rows.filter((tr) => tr.children[1].textContent === 'http');
  if (!http.length) return;
  const q = new URLSearchParams();
  for (const tr of http) q.append('route', tr.dataset.route);
  const r = await api('GET', '/api/routes/stats?' + q);
  if (!r.ok) return;
  const now = Date.parse(r.data.time);
  for (const tr of http) {
    const name = tr.dataset.route;
    const cur = r.data.routes[name];
    const prev = st.routeSamples.get(name);
    if (!prev || now - prev.time >= 1000) st.routeSamples.set(name, {time: now, s: cur, prev});
    const sample = st.routeSamples.get(name);
    const p = sample.prev;
    if (!p || !cur) continue;
    const dt = (sample.time - p.time) / 1000;
    const n = sample.s.requests_total - p.s.requests_total;
    const cell = (k) => tr.querySelector(`td[data-stat="${k}"]`);
    cell('rps').textContent = (n / dt).toFixed(1);
    cell('err').textContent = n ? (100 * (sample.s.responses_5xx_total - p.s.responses_5xx_total) / n).toFixed(1) + '%' : '–';
    const top = sample.s.duration_buckets.length ? sample.s.duration_buckets[sample.s.duration_buckets.length - 1].le : 0;
    cell('p50').textContent = fmtSeconds(quantile(0.5, sample.s, p.s), top);
    cell('p99').textContent = fmtSeconds(quantile(0.99, sample.s, p.s), top);
  }
}

// quantile estimates the q-quantile of the durations between two
// readings of a histogram, interpolating within a bucket as Prometheus'
// histogram_quantile does; Infinity beyond the last bound, null with no
// request.
function quantile(q, cur, prev) {
  const total = cur.duration_count - prev.duration_count;
  if (total <= 0) return null;
  const rank = q * total;
  let lo = 0, below = 0;
  for (let i = 0; i < cur.duration_buckets.length; i++) {
    const b = cur.duration_buckets[i];
    const c = b.count - (prev.duration_buckets[i] ? prev.duration_buckets[i].count : 0);
    if (c >= rank) return lo + (b.le - lo) * (rank - below) / Math.max(1, c - below);
    lo = b.le;
    below = c;
  }
  return Infinity;
}

function fmtSeconds(s, top) {
  if (s === null) return '–';
  if (s === Infinity) return `> ${top} s`;
  return s < 1 ? (s * 1000).toFixed(s < 0.01 ? 2 : 0) + ' ms' : s.toFixed(2) + ' s';
}

// ---- upstreams -------------------------------------------------------------

function overrideChips(o) {
  if (!o) return [];
  const out = [];
  if (o.weight !== undefined) out.push(el('span', {class: 'chip'}, 'weight ' + o.weight));
  if (o.drain !== undefined) out.push(el('span', {class: 'chip'}, o.drain ? 'drain' : 'drain off'));
  if (o.disabled !== undefined) out.push(el('span', {class: 'chip'}, o.disabled ? 'disabled' : 'enabled'));
  return out;
}

function actionButton(label, action, pool, s) {
  return el('button', {type: 'button', class: 'small', 'data-action': action, 'data-pool': pool, 'data-addr': s.address}, label);
}

function serverRow({pool, s}) {
  const o = s.override || {};
  const weight = s.effective_weight === s.weight ? String(s.weight) : `${s.weight} → ${+s.effective_weight.toFixed(2)}`;
  const tr = el('tr', {'data-pool': pool, 'data-addr': s.address},
    el('td', {}, pool), el('td', {class: 'mono'}, s.address),
    el('td', {class: `state state-${s.state}`}, s.state), el('td', {title: history(s)}, s.reason), timeCell(s.since),
    el('td', {class: 'num'}, weight), el('td', {}, ...overrideChips(s.override)),
    el('td', {class: 'num'}, s.in_flight), el('td', {class: 'num'}, s.requests),
    el('td', {class: 'num'}, s.failures), el('td', {class: 'num'}, s.ejections),
    el('td', {class: 'actions'},
      actionButton('Weight…', 'weight', pool, s),
      o.drain ? actionButton('Undrain', 'undrain', pool, s) : actionButton('Drain', 'drain', pool, s),
      o.disabled ? actionButton('Enable', 'enable', pool, s) : actionButton('Disable', 'disable', pool, s),
      s.override ? actionButton('Clear', 'clear', pool, s) : null));
  return tr;
}

// history is a server's last state changes and failing check, shown on
// hovering its reason.
function history(s) {
  const lines = (s.transitions || []).map((x) => `${x.at}  ${x.from} → ${x.to}: ${x.reason}`);
  if (s.last_check) lines.push('last failing check: ' + s.last_check);
  return lines.join('\n') || 'no state change since it was added';
}

// The PATCH body and the question each action asks.
const actions = {
  weight: {body: (w) => ({weight: w}), ask: 'Set the weight of'},
  drain: {body: () => ({drain: true}), ask: 'Drain (no new requests to)'},
  undrain: {body: () => ({drain: null}), ask: 'Stop draining'},
  disable: {body: () => ({disabled: true}), ask: 'Disable'},
  enable: {body: () => ({disabled: null}), ask: 'Clear the disable of'},
  clear: {body: () => ({weight: null, drain: null, disabled: null}), ask: 'Clear every override of'},
};

async function onServerAction(e) {
  const b = e.target.closest('button[data-action]');
  if (!b) return;
  const {action, pool, addr} = b.dataset;
  const a = actions[action];
  let current;
  if (action === 'weight') {
    const s = findServer(pool, addr);
    current = s && s.override && s.override.weight !== undefined ? s.override.weight : (s ? s.weight : 1);
  }
  if (!await confirmAction(`${a.ask} ${addr} in upstream ${pool}?`, current)) return;
  let w;
  if (action === 'weight') {
    w = Number($('#confirm-weight').value);
    if (!Number.isInteger(w) || w < 0) { toast('weight: a whole number 0 or more', true); return; }
  }
  const r = await api('PATCH', `/api/upstreams/${encodeURIComponent(pool)}/servers/${encodeURIComponent(addr)}`, a.body(w));
  if (!r.ok) { toast(`${addr}: ${r.data ? r.data.error : r.status}`, true); return; }
  toast(`${addr}: done`);
  await refresh();
}

function findServer(pool, addr) {
  const p = st.upstreams.find((u) => u.name === pool);
  return p && p.servers.find((s) => s.address === addr);
}

// ---- certificates ----------------------------------------------------------

function certRow(c) {
  const days = Math.round((Date.parse(c.not_after) - Date.now()) / 86400000);
  const exp = el('td', {title: c.not_after, class: days < 14 ? 'bad' : days < 30 ? 'warn' : ''}, `${days} days`);
  const ocsp = c.ocsp.stapled ? el('span', {class: 'ok'}, 'stapled') :
    el('span', {class: c.ocsp.last_error ? 'bad' : 'muted'}, c.ocsp.last_error || (c.ocsp.responder ? 'not stapled' : 'no responder'));
  const rn = c.renewal;
  const renewal = !rn ? el('span', {class: 'muted'}, '—') :
    el('span', {class: rn.last_error ? 'bad' : ''}, rn.last_error ? `failed ${rn.failures}×: ${rn.last_error}` :
      rn.next_attempt ? `next ${rn.next_attempt}` : (rn.reason || 'ok'));
  return el('tr', {},
    el('td', {}, c.names.join(' '), c.default ? el('span', {class: 'chip'}, 'default') : null, c.active ? null : el('span', {class: 'chip'}, 'inactive')),
    el('td', {}, c.source), el('td', {}, c.issuer), exp, el('td', {}, c.key_type), el('td', {}, ocsp), el('td', {}, renewal));
}

function renderCerts() {
  if (!st.certs) return;
  const rows = st.certs.map(certRow);
  if (!rows.length) rows.push(el('tr', {}, el('td', {colSpan: 7, class: 'muted'}, 'No certificates: no listener terminates TLS.')));
  $('#certs-table tbody').replaceChildren(...rows);
}

// ---- configuration -----------------------------------------------------------

function renderConfig() {
  const c = st.config;
  if (!c) return;
  const info = [['Version', c.version], ['Generation', c.generation], ['Hash', c.hash], ['Loaded', `${c.loaded_at} (${ago(c.loaded_at)})`]];
  $('#cfg-info').replaceChildren(...info.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  $('#cfg-files tbody').replaceChildren(...c.files.map((f) =>
    el('tr', {}, el('td', {class: 'mono'}, f.path), el('td', {class: 'mono'}, f.sha256.slice(0, 16)))));
  const r = c.last_reload;
  const box = $('#cfg-reload');
  if (!r) { box.replaceChildren(el('p', {class: 'muted'}, 'No reload since start.')); return; }
  const kids = [el('p', {}, reloadSummary(r, true), ` at ${r.time}, ${(r.duration_seconds * 1000).toFixed(1)} ms`)];
  if (!r.ok) {
    kids.push(el('p', {class: 'error'}, r.error));
    kids.push(el('ul', {class: 'errors', id: 'reload-errors'}, ...(r.errors || []).map((e) =>
      el('li', {}, e.at ? el('code', {class: 'at'}, e.at) : null, e.at ? ': ' : '', e.message,
        e.source ? el('pre', {class: 'source'}, e.source) : null))));
  }
  box.replaceChildren(...kids);
}

async function onReload() {
  if (!await confirmAction('Reload the configuration files now? A file that fails to load is refused whole; the live configuration stays.')) return;
  const r = await api('POST', '/api/reload');
  if (r.status === 200) toast('reload applied: generation ' + r.data.generation);
  else if (r.status === 422) toast(`${r.data.error}: ${(r.data.errors || []).length} error(s)`, true);
  else toast('reload: ' + (r.data ? r.data.error : r.status), true);
  await refresh();
}

// ---- explain -------------------------------------------------------------------

async function onExplain(e) {
  e.preventDefault();
  const q = new URLSearchParams({method: $('#ex-method').value, url: $('#ex-url').value});
  const ip = $('#ex-ip').value.trim();
  if (ip) q.set('client_ip', ip);
  for (const line of $('#ex-headers').value.split('\n')) if (line.trim()) q.append('header', line.trim());
  const r = await api('GET', '/api/explain?' + q);
  const out = $('#ex-result');
  if (r.status === 404) { out.replaceChildren(el('p', {class: 'warn', id: 'ex-none'}, 'No route would serve this request.')); return; }
  if (!r.ok) { out.replaceChildren(el('p', {class: 'error'}, r.data ? r.data.error : String(r.status))); return; }
  const x = r.data;
  const rows = [['Route', x.route], ['Kind', x.kind], ['Listener', x.listener], ['Upstream', x.upstream || '(answers itself)'],
    ['Rule', x.rule], ['Priority', x.priority], ['Defined at', x.source], ['Upstream path', x.upstream_path],
    ['Status', x.status], ['Location', x.location], ['Policies', (x.policies || []).join(', ')],
    ['Denied by', x.denied ? `the ${x.denied}'s access lists` : ''],
    ['Tried before', x.tried_count ? (x.tried_before || []).join(', ') + (x.tried_count > (x.tried_before || []).length ? `, and ${x.tried_count - x.tried_before.length} more` : '') + ' (did not match)' : '']];
  if (x.settings) {
    const s = x.settings;
    rows.push(['Balance', s.balance], ['Timeouts', `connect ${s.connect_timeout_seconds}s, response ${s.response_timeout_seconds}s, idle ${s.idle_timeout_seconds}s`], ['Retries', s.retries]);
  }
  out.replaceChildren(el('dl', {id: 'ex-dl'}, ...rows.filter(([, v]) => v !== undefined && v !== '' && v !== 0)
    .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {'data-field': k}, v)])));
}

// ---- polling and navigation --------------------------------------------------------

async function refresh() {
  const [cfg, ov] = await Promise.all([api('GET', '/api/config'), api('GET', '/api/overview')]);
  if (cfg.ok) st.config = cfg.data;
  if (ov.ok) {
    // Rates are taken over at least a second, however often refresh runs.
    if (st.overview && Date.parse(ov.data.time) - Date.parse(st.overview.time) >= 1000) st.prevSample = st.overview;
    st.overview = ov.data;
  }
  const p = st.page;
  if (p === 'routes' && st.config && st.config.generation !== st.routesGen) {
    const r = await api('GET', '/api/routes');
    if (r.ok) {
      st.routesGen = st.config.generation;
      st.lists.routes.rows = r.data.routes.map((x) => ({key: [x.name, x.rule, x.upstream, x.source, ...x.listeners].join(' ').toLowerCase(), item: x}));
      draw(st.lists.routes); // and its stats
    }
  } else if (p === 'routes') {
    await routeStats();
  }
  if (p === 'upstreams') {
    const r = await api('GET', '/api/upstreams');
    if (r.ok) {
      st.upstreams = r.data.upstreams;
      st.lists.ups.rows = st.upstreams.flatMap((u) => u.servers.map((s) => ({key: `${u.name} ${s.address} ${s.state} ${s.reason}`.toLowerCase(), item: {pool: u.name, s}})));
      draw(st.lists.ups);
    }
  }
  if (p === 'certificates') {
    const r = await api('GET', '/api/certificates');
    st.certs = r.ok ? r.data.certificates : [];
    renderCerts();
  }
  renderOverview();
  renderConfig();
  const stat = $('#status');
  stat.className = 'status';
  stat.textContent = st.config ? `generation ${st.config.generation} · updated ${new Date().toLocaleTimeString()}` : '';
}

async function poll() {
  try {
    await refresh();
  } catch (e) {
    $('#status').className = 'status bad';
    $('#status').textContent = 'admin API unreachable: ' + e.message;
  }
  setTimeout(poll, POLL_MS);
}

function showPage() {
  const name = location.hash.slice(1) || 'overview';
  st.page = document.getElementById('page-' + name) ? name : 'overview';
  for (const s of document.querySelectorAll('section.page')) s.hidden = s.id !== 'page-' + st.page;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.page === st.page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  refresh().catch(() => {});
}

async function logout() {
  await api('POST', '/ui/logout');
  location.assign('/ui/login');
}

async function start() {
  const r = await api('GET', '/ui/session');
  csrf = r.data.csrf_token;
  // A page or search shown gets its stats once typing pauses.
  let statsTimer;
  list('routes', routeRow, () => {
    clearTimeout(statsTimer);
    statsTimer = setTimeout(() => { routeStats().catch(() => {}); }, 250);
  });
  list('ups', serverRow);
  $('#ups-table tbody').addEventListener('click', (e) => { onServerAction(e).catch((err) => toast(err.message, true)); });
  $('#reload').addEventListener('click', () => { onReload().catch((err) => toast(err.message, true)); });
  $('#explain-form').addEventListener('submit', (e) => { onExplain(e).catch((err) => toast(err.message, true)); });
  $('#logout').addEventListener('click', () => { logout().catch(() => {}); });
  $('#confirm').addEventListener('close', onConfirmClose);
  window.addEventListener('hashchange', showPage);
  showPage();
  setTimeout(poll, POLL_MS);
}

start().catch((e) => toast(e.message, true));
