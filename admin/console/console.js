// The operator's console of the Paduraksa admin API. Plain JavaScript,
// no library: every value from the config or from clients is put in the
// page as text (textContent, createTextNode), never as markup.
'use strict';

(function () {
  // The API is mounted where the console's parent is: /console/ -> /.
  const base = new URL('../', location.href);
  const state = { csrf: '', auth: false, page: '', timer: 0, serving: 0, last: null };
  const pollMillis = 2000;

  const $ = (id) => document.getElementById(id);

  // el builds an element; attrs are set as properties or attributes,
  // children are nodes or strings (made text nodes).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k.startsWith('data-')) e.setAttribute(k, String(v));
      else e[k] = v;
    }
    append(e, children);
    return e;
  }

  function append(e, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  function fill(e, ...children) {
    e.replaceChildren();
    append(e, children);
    return e;
  }

  function table(e, head, rows) {
    fill(e, el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.map((r) => r instanceof Node ? r : el('tr', {}, r.map((c) => el('td', {}, c))))));
  }

  function when(t) {
    if (!t) return '';
    const d = new Date(t);
    return isNaN(d) ? String(t) : d.toISOString().replace('.000Z', 'Z');
  }

  // APIError is an answer that is not 2xx, with its problems.
  class APIError extends Error {
    constructor(status, body) {
      const probs = problemsOf(body);
      super(probs.length ? probs.map((p) => p.code + ': ' + p.message).join('; ') : 'HTTP ' + status);
      this.status = status;
      this.body = body;
      this.problems = probs;
    }
  }

  // problemsOf reads the problems of an answer: {"error": {...}} or
  // {"errors": [...]}.
  function problemsOf(body) {
    if (!body || typeof body !== 'object') return [];
    if (Array.isArray(body.errors)) return body.errors;
    if (body.error) return [body.error];
    return [];
  }

  async function api(method, path, body, type) {
    const opt = { method, headers: {}, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET' && method !== 'HEAD' && state.csrf) opt.headers['X-CSRF-Token'] = state.csrf;
    if (body !== undefined) {
      opt.body = typeof body === 'string' ? body : JSON.stringify(body);
      opt.headers['Content-Type'] = type || 'application/json';
    }
    const res = await fetch(new URL(path.replace(/^\//, ''), base), opt);
    const text = await res.text();
    let data = text;
    if ((res.headers.get('Content-Type') || '').startsWith('application/json')) {
      try { data = JSON.parse(text); } catch (e) { /* left as text */ }
    }
    if (res.status === 401 && state.auth) showLogin('Your session has ended: log in again.');
    if (!res.ok) throw new APIError(res.status, data);
    return { status: res.status, headers: res.headers, data };
  }

  function problemList(e, probs) {
    fill(e, probs.map((p) => el('li', { 'data-path': p.path || '' },
      p.path ? el('code', { class: 'path' }, p.path) : null, p.path ? ' ' : null,
      el('code', { class: 'code' }, p.code || ''), ' ', p.message || '')));
  }

  function banner(msg) {
    const b = $('banner');
    b.hidden = !msg;
    b.textContent = msg || '';
  }

  // Session.

  function showLogin(msg) {
    stopPolling();
    state.csrf = '';
    $('login').hidden = false;
    $('nav').hidden = true;
    $('logout').hidden = true;
    for (const p of document.querySelectorAll('.page')) p.hidden = true;
    $('login-error').textContent = msg || '';
    $('login-token').focus();
  }

  function loggedIn(s) {
    state.auth = s.auth;
    state.csrf = s.csrf || '';
    $('login').hidden = true;
    $('nav').hidden = false;
    $('logout').hidden = !s.auth;
    route();
  }

  async function start() {
    try {
      const res = await fetch(new URL('console/session', base), { credentials: 'same-origin', cache: 'no-store' });
      if (res.ok) {
        loggedIn(await res.json());
        return;
      }
      state.auth = true;
      showLogin('');
    } catch (e) {
      showLogin('The admin API does not answer: ' + e.message);
    }
  }

  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await api('POST', 'console/login', { token: $('login-token').value });
      $('login-token').value = '';
      loggedIn(r.data);
    } catch (e) {
      $('login-error').textContent = e.message;
    }
  });

  $('logout').addEventListener('click', async () => {
    try { await api('POST', 'console/logout'); } catch (e) { /* ended either way */ }
    state.auth = true;
    showLogin('Logged out.');
  });

  // Pages.

  const pages = {
    overview: { load: loadOverview, live: true },
    hosts: { load: loadHosts },
    upstreams: { load: loadUpstreams, live: true },
    requests: { load: loadRequests, live: true },
    simulate: { load: loadSimulate },
    config: { load: loadConfig },
    certificates: { load: loadCertificates },
  };

  function route() {
    const name = location.hash.replace(/^#/, '') || 'overview';
    const page = pages[name] ? name : 'overview';
    state.page = page;
    for (const p of document.querySelectorAll('.page')) p.hidden = p.id !== 'page-' + page;
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === page);
    stopPolling();
    refresh(true);
  }

  async function refresh(first) {
    const page = state.page;
    const p = pages[page];
    try {
      await p.load(first);
      banner('');
      $('live').textContent = p.live ? 'live, every ' + pollMillis / 1000 + ' s; updated ' + when(new Date()) : '';
    } catch (e) {
      if (e.status !== 401) banner(e.message);
    }
    if (p.live && state.page === page && $('login').hidden) {
      state.timer = setTimeout(() => refresh(false), pollMillis);
    }
  }

  function stopPolling() {
    clearTimeout(state.timer);
    state.timer = 0;
  }

  window.addEventListener('hashchange', () => { if ($('login').hidden) route(); });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && $('login').hidden && pages[state.page].live && !state.timer) refresh(false);
    else if (document.hidden) stopPolling();
  });

  // Overview: polled, the rates from two answers.
  async function loadOverview() {
    const [o, h] = await Promise.all([api('GET', 'overview'), api('GET', 'health')]);
    const ov = o.data;
    state.serving = ov.serving;
    let rps = '', eps = '';
    const last = state.last;
    if (last && ov.time !== last.time && ov.requests >= last.requests) {
      const secs = (new Date(ov.time) - new Date(last.time)) / 1000;
      rps = ((ov.requests - last.requests) / secs).toFixed(1);
      eps = ((ov.errors - last.errors) / secs).toFixed(1);
    }
    state.last = ov;
    const facts = [
      ['Serving revision', ov.serving], ['Applied', when(ov.applied)], ['Outcome', ov.status + (ov.warnings ? ', ' + ov.warnings + ' warnings' : '')],
      ['Instance', ov.instance || '(unnamed)'], ['Hosts', ov.hosts], ['Routes', ov.routes], ['Upstreams', ov.upstreams],
      ['Destinations', ov.destinations], ['Requests', ov.requests], ['Errors (5xx)', ov.errors],
      ['Requests per second', rps || '…'], ['Errors per second', eps || '…'],
    ];
    fill($('overview'), facts.map(([k, v]) => [el('dt', {}, k), el('dd', { 'data-fact': k }, String(v))]));
    table($('overview-upstreams'), ['Upstream', 'Mode', 'Available', 'Draining', 'In flight'],
      h.data.clusters.map((c) => [c.id, c.mode,
        c.destinations.filter((d) => d.available).length + ' of ' + c.destinations.length,
        c.destinations.filter((d) => d.draining).length,
        c.destinations.reduce((n, d) => n + d.inFlight, 0)]));
  }

  // The serving revision's canonical document.
  async function servingDocument() {
    const o = await api('GET', 'overview');
    state.serving = o.data.serving;
    return (await api('GET', 'revisions/' + o.data.serving)).data;
  }

  function kv(obj) {
    if (obj === undefined || obj === null) return '';
    if (typeof obj !== 'object') return String(obj);
    return Object.entries(obj).map(([k, v]) => k + '=' + (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ');
  }

  // Hosts and routes: from the canonical JSON, every value as text.
  async function loadHosts() {
    const rev = await servingDocument();
    const doc = rev.canonical || {};
    const out = $('hosts');
    fill(out, (doc.hosts || []).map((h, i) => {
      const extra = Object.assign({}, h);
      for (const k of ['names', 'kind', 'routes', 'policies']) delete extra[k];
      const routes = h.routes || [];
      const t = el('table', { class: 'routes' });
      table(t, ['Route', 'Match', 'Target', 'Policies', 'More'], routes.map((r, j) => {
        const m = Object.assign({ path: r.path || '/' }, r.pathType ? { pathType: r.pathType } : {}, r.match || {});
        let target = r.upstream || '';
        if (r.backends) target = 'split: ' + r.backends.map((b) => b.upstream + ' ×' + (b.weight === undefined ? 1 : b.weight)).join(', ');
        const more = Object.assign({}, r);
        for (const k of ['id', 'path', 'pathType', 'match', 'upstream', 'backends', 'policies']) delete more[k];
        return [r.id || 'routes[' + j + ']', kv(m), target, (r.policies || []).join(', '), kv(more)];
      }));
      return el('article', { class: 'host', 'data-host': i },
        el('h3', {}, (h.names || []).join(', ')),
        el('p', { class: 'muted' }, 'kind: ' + (h.kind || 'proxy') + ((h.policies || []).length ? '; policies: ' + h.policies.join(', ') : '')),
        Object.keys(extra).length ? el('p', { class: 'muted' }, kv(extra)) : null,
        routes.length ? t : null);
    }));
    if (!(doc.hosts || []).length) fill(out, el('p', {}, 'The serving config has no host.'));
  }

  // Upstreams: polled; drain and undrain confirmed in the page.
  async function loadUpstreams() {
    const h = await api('GET', 'health');
    const out = $('upstreams');
    const open = out.querySelector('.confirm');
    if (open) return; // a confirmation is waiting: leave the page as it is
    fill(out, h.data.clusters.map((c) => el('article', { class: 'upstream', 'data-upstream': c.id },
      el('h3', {}, c.id, ' ', el('span', { class: 'mode ' + c.mode }, c.mode), c.checked ? '' : el('span', { class: 'muted' }, ' (not health checked)')),
      destinationTable(c))));
  }

  function destinationTable(c) {
    const t = el('table');
    table(t, ['Destination', 'Address', 'Health', 'Active', 'Passive', 'Available', 'In flight', 'Ejection', 'Ejections', 'Last change', 'Drain'],
      c.destinations.map((d) => el('tr', { 'data-destination': d.id },
        el('td', {}, d.id), el('td', {}, d.address), el('td', { class: 'health ' + d.health }, d.health),
        el('td', {}, d.active), el('td', {}, d.passive), el('td', {}, d.available ? 'yes' : 'no'),
        el('td', {}, String(d.inFlight)),
        el('td', {}, d.ejection ? d.ejection.reason + ' until ' + when(d.ejection.until) : ''),
        el('td', {}, kv(d.ejections)),
        el('td', {}, d.lastChange ? d.lastChange.check + ' ' + d.lastChange.from + ' → ' + d.lastChange.to + ' (' + d.lastChange.reason + ') ' + when(d.lastChange.time) : ''),
        el('td', {}, drainCell(c.id, d)))));
    return t;
  }

  function drainCell(up, d) {
    const cell = el('span');
    const action = d.draining ? 'undrain' : 'drain';
    const label = d.draining ? 'Undrain' : 'Drain';
    const note = d.draining ? 'draining (' + (d.drainedBy || '') + ') ' : '';
    const ask = () => fill(cell, el('span', { class: 'confirm' }, label + ' ' + d.id + '? ',
      el('button', { type: 'button', class: 'danger', 'data-action': 'confirm-' + action, onclick: run }, 'Yes, ' + action),
      ' ', el('button', { type: 'button', 'data-action': 'cancel', onclick: () => { show(); refresh(false); } }, 'Cancel')));
    const show = () => fill(cell, note, d.drainedBy === 'document' && d.draining ? el('span', { class: 'muted' }, 'the document drains it') :
      el('button', { type: 'button', 'data-action': action, onclick: ask }, label));
    async function run() {
      try {
        await api('POST', 'upstreams/' + encodeURIComponent(up) + '/destinations/' + encodeURIComponent(d.id) + '/' + action);
        banner('');
      } catch (e) {
        banner(e.message);
      }
      fill(cell);
      stopPolling();
      refresh(false);
    }
    show();
    return cell;
  }

  // Recent requests: polled with the filters; paths and headers shown as
  // received, as text.
  async function loadRequests() {
    const q = new URLSearchParams();
    for (const k of ['host', 'status', 'upstream']) {
      const v = $('requests-' + k).value.trim();
      if (v) q.set(k, v);
    }
    let r;
    try {
      r = await api('GET', 'requests' + (q.toString() ? '?' + q : ''));
    } catch (e) {
      if (e.status === 404 && e.problems.length && e.problems[0].code === 'admin.notFound') {
        $('requests-note').textContent = 'This gateway keeps no sample of recent requests.';
        fill($('requests'));
        return;
      }
      throw e;
    }
    const list = Array.isArray(r.data) ? r.data : (r.data.requests || []);
    $('requests-note').textContent = list.length + ' recent requests' + (q.toString() ? ' matching the filters' : '') +
      (r.data.kept !== undefined ? ' (' + r.data.matched + ' matched of ' + r.data.kept + ' kept in the sample)' : '');
    const cols = ['time', 'method', 'host', 'path', 'status', 'upstream', 'destination', 'client', 'durationSeconds'];
    const present = cols.filter((c) => list.some((x) => x[c] !== undefined && x[c] !== ''));
    const rest = [];
    for (const x of list) for (const k of Object.keys(x)) if (!cols.includes(k) && !rest.includes(k)) rest.push(k);
    table($('requests'), present.concat(rest), list.map((x) => el('tr', { class: 'request' },
      present.concat(rest).map((k) => el('td', { 'data-col': k },
        k === 'time' ? when(x[k]) : (typeof x[k] === 'object' && x[k] !== null ? JSON.stringify(x[k]) : (x[k] === undefined ? '' : String(x[k]))))))));
  }

  $('requests-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    stopPolling();
    refresh(false);
  });

  // The simulator.
  async function loadSimulate(first) {
    if (first && !$('whatif-draft').value) {
      const rev = await servingDocument();
      $('whatif-draft').value = rev.canonical ? JSON.stringify(rev.canonical, null, 2) : '';
    }
  }

  function headerLines(text) {
    const h = {};
    for (const line of text.split('\n')) {
      const i = line.indexOf(':');
      if (i <= 0) continue;
      const name = line.slice(0, i).trim();
      (h[name] = h[name] || []).push(line.slice(i + 1).trim());
    }
    return h;
  }

  function outcomeLine(o) {
    let s = 'outcome: ' + o.kind;
    if (o.status) s += ' ' + o.status;
    if (o.upstream) s += ' to upstream ' + o.upstream.id;
    if (o.location) s += ' to ' + o.location;
    s += ' (' + o.stage + (o.policy ? ' ' + o.policy : '') + (o.reason ? ': ' + o.reason : '') + ')';
    return s;
  }

  $('sim-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const probe = { method: $('sim-method').value.trim(), url: $('sim-url').value.trim(), header: headerLines($('sim-headers').value) };
    if ($('sim-peer').value.trim()) probe.peer = $('sim-peer').value.trim();
    if ($('sim-sni').value.trim()) probe.tls = { sni: $('sim-sni').value.trim() };
    probe.httpVersion = Number($('sim-version').value) || 0;
    for (const id of ['sim-request', 'sim-outcome', 'sim-details', 'sim-trace', 'sim-errors']) fill($(id));
    $('sim-request').textContent = (probe.method || 'GET') + ' ' + probe.url;
    try {
      const r = (await api('POST', 'simulate', { probe })).data;
      const o = r.outcome;
      $('sim-outcome').textContent = outcomeLine(o);
      const details = [];
      if (o.match) details.push('route match: ' + o.match);
      if (o.split) details.push('split: ' + o.split.upstream + ', ' + o.split.why);
      if (o.mirror) details.push('mirror: ' + (o.mirror.copied ? 'copied to ' : 'not copied to ') + o.mirror.upstream + ', ' + o.mirror.reason);
      for (const h of o.headers || []) details.push('header ' + h.name + (h.value ? ': ' + h.value : ' absent: ' + h.absent));
      fill($('sim-details'), details.map((d) => el('li', {}, d)));
      fill($('sim-trace'), (r.trace || []).map((s) => el('li', { class: 'step' },
        el('span', { class: 'step-line' }, s.kind + ': ' + s.summary),
        s.facts ? el('span', { class: 'muted facts-inline' }, ' ' + kv(s.facts)) : null)));
    } catch (e) {
      problemList($('sim-errors'), e.problems.length ? e.problems : [{ code: 'console', message: e.message }]);
    }
  });

  $('whatif-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill($('whatif-changes'));
    fill($('whatif-errors'));
    $('whatif-summary').textContent = '';
    let draft;
    try {
      draft = JSON.parse($('whatif-draft').value);
    } catch (e) {
      problemList($('whatif-errors'), [{ code: 'console.draft.json', message: 'the draft is not JSON: ' + e.message }]);
      return;
    }
    try {
      const rep = (await api('POST', 'simulate/diff', { draft })).data;
      $('whatif-summary').textContent = rep.compared + ' recent requests compared, ' + (rep.changes || []).length + ' would change';
      fill($('whatif-changes'), (rep.changes || []).map((c) => el('li', {},
        (c.probe.Method || 'GET') + ' ' + c.probe.URL + ': ' + (c.fields || []).join(', ') + ': ',
        c.before ? outcomeLine(c.before.outcome) : '', ' → ', c.after ? outcomeLine(c.after.outcome) : '')));
      if (rep.refused) problemList($('whatif-errors'), rep.refused.map((m) => ({ code: 'simulate.refused', message: m })));
    } catch (e) {
      problemList($('whatif-errors'), e.problems.length ? e.problems : [{ code: 'console', message: e.message }]);
    }
  });

  // Config: the serving document, the revisions, a diff, a push.
  async function loadConfig(first) {
    const [rs, cfg] = await Promise.all([api('GET', 'revisions'), api('GET', 'config')]);
    state.serving = rs.data.serving;
    $('config-serving').textContent = 'revision ' + cfg.headers.get('Paduraksa-Revision') + ', ' + cfg.headers.get('Paduraksa-Status') +
      ', applied ' + when(cfg.headers.get('Last-Modified'));
    $('config-document').textContent = cfg.data;
    if (first && !$('push-document').value) $('push-document').value = cfg.data;
    const revs = rs.data.revisions;
    table($('revisions'), ['Revision', 'Outcome', 'Time', 'Took', 'Errors', 'Warnings', 'Bytes'], revs.map((r) => el('tr', { 'data-revision': r.revision },
      el('td', {}, String(r.revision) + (r.revision === rs.data.serving ? ' (serving)' : '')), el('td', {}, r.status), el('td', {}, when(r.time)),
      el('td', {}, (r.tookSeconds * 1000).toFixed(1) + ' ms'),
      el('td', {}, r.errors.map((p) => el('div', {}, (p.path ? p.path + ' ' : '') + p.code))),
      el('td', {}, r.warnings.map((p) => el('div', {}, (p.path ? p.path + ' ' : '') + p.code))),
      el('td', {}, String(r.bytes)))));
    for (const [id, pick] of [['diff-from', 1], ['diff-to', 0]]) {
      const sel = $(id);
      const keep = sel.value;
      fill(sel, revs.map((r) => el('option', { value: String(r.revision) }, r.revision + ' ' + r.status)));
      if (keep && revs.some((r) => String(r.revision) === keep)) sel.value = keep;
      else if (revs[pick]) sel.value = String(revs[pick].revision);
    }
  }

  // lineDiff returns the lines of a and b as [' '|'-'|'+', line], by
  // their longest common subsequence (documents are small).
  function lineDiff(a, b) {
    const x = a.split('\n'), y = b.split('\n');
    const n = x.length, m = y.length;
    if (n * m > 4e6) return [['-', '(the documents are too large to compare here)']];
    const l = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) l[i][j] = x[i] === y[j] ? l[i + 1][j + 1] + 1 : Math.max(l[i + 1][j], l[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; } else if (l[i + 1][j] >= l[i][j + 1]) out.push(['-', x[i++]]); else out.push(['+', y[j++]]);
    }
    while (i < n) out.push(['-', x[i++]]);
    while (j < m) out.push(['+', y[j++]]);
    return out;
  }

  $('diff-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const [a, b] = await Promise.all([api('GET', 'revisions/' + $('diff-from').value), api('GET', 'revisions/' + $('diff-to').value)]);
      const d = lineDiff(a.data.document, b.data.document);
      fill($('diff'), d.map(([op, line]) => el('span', { class: op === '+' ? 'add' : op === '-' ? 'del' : 'same' }, op + ' ' + line + '\n')));
    } catch (e) {
      fill($('diff'), e.message);
    }
  });

  // locate returns the line of a YAML document that a problem's path
  // (hosts[0].routes[1].upstream) names, or the nearest line above it
  // that it finds: the keys and "- " items are followed by their
  // indentation, and a flow collection ({...}, [...]) ends the walk on
  // its line. -1 when not even the first step is found.
  function locate(lines, path) {
    const segs = [];
    path.replace(/\[(\d+)\]|([^.[\]]+)/g, (m, i, k) => { segs.push(i !== undefined ? { i: Number(i) } : { k }); return m; });
    const info = lines.map((l) => {
      const m = /^(\s*)((?:-(?:\s+|$))?)(.*)$/.exec(l);
      return { ind: m[1].length, dash: m[2] !== '', ci: m[1].length + m[2].length, body: m[3] };
    });
    const skip = (x) => (x.body === '' && !x.dash) || x.body.startsWith('#');
    let line = -1, own = null, ownCol = 0;
    let inside = () => true, col = -1; // col: the column of the node's keys (-1: the first child's)
    for (const s of segs) {
      if (own !== null && /^[[{]/.test(own.trim())) return line;
      let hit = -1;
      if (s.k !== undefined) {
        const re = new RegExp('^(["\']?)' + s.k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '\\1\\s*:(?:\\s|$)');
        let c = col;
        if (own !== null && re.test(own)) hit = line;
        for (let j = line + 1; hit < 0 && j < lines.length; j++) {
          const x = info[j];
          if (skip(x)) continue;
          if (!inside(x)) break;
          if (c < 0) c = x.ci;
          if (x.ci === c && re.test(x.body)) hit = j;
        }
        if (hit < 0) return line;
        const kcol = hit === line ? ownCol : info[hit].ci;
        own = (hit === line ? own : info[hit].body).replace(re, '');
        line = hit;
        inside = (y) => y.ind > kcol || (y.ind === kcol && y.dash);
        col = -1;
        ownCol = kcol;
      } else {
        let n = -1, d = -1;
        for (let j = line + 1; j < lines.length; j++) {
          const x = info[j];
          if (skip(x)) continue;
          if (!inside(x)) break;
          if (x.dash && (d < 0 || x.ind === d)) {
            d = x.ind;
            if (++n === s.i) { hit = j; break; }
          }
        }
        if (hit < 0) return line;
        line = hit;
        own = info[hit].body;
        ownCol = info[hit].ci;
        inside = (y) => y.ind > d && !(y.dash && y.ind === d);
        col = ownCol;
      }
    }
    return line;
  }

  // showProblems lists a push's or a check's problems, each at its path,
  // and shows the document with each problem under the line its path
  // names.
  function showProblems(probs) {
    problemList($('push-problems'), probs);
    const doc = $('push-document').value;
    const lines = doc.split('\n');
    const at = new Map();
    for (const p of probs) {
      const l = p.path ? locate(lines, p.path) : -1;
      if (!at.has(l)) at.set(l, []);
      at.get(l).push(p);
    }
    const note = (l) => (at.get(l) || []).map((p) => el('span', { class: 'problem', 'data-path': p.path || '' },
      '    ^ ' + (p.path ? p.path + ' ' : '') + p.code + ': ' + p.message + '\n'));
    const out = $('push-annotated');
    out.hidden = probs.length === 0;
    fill(out, note(-1), lines.map((text, i) => [el('span', { class: 'line', 'data-line': i + 1 }, text + '\n'), note(i)]));
  }

  $('push-check').addEventListener('click', async () => {
    fill($('push-problems'));
    $('push-result').textContent = 'checking…';
    try {
      const r = (await api('POST', 'config/check', $('push-document').value, 'application/yaml')).data;
      const probs = r.errors || [];
      $('push-result').textContent = (r.ok ? 'no problem' : probs.length + ' problems') + ': ' + r.message +
        ((r.warnings || []).length ? ' (' + r.warnings.length + ' warnings)' : '');
      showProblems(probs.concat(r.warnings || []));
    } catch (e) {
      $('push-result').textContent = e.status === 404 ? 'This gateway has no check; push to see the problems.' : 'check failed';
      if (e.status !== 404) showProblems(e.problems);
    }
  });

  $('push-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill($('push-problems'));
    $('push-result').textContent = 'pushing…';
    let r;
    try {
      r = await api('PUT', 'config', $('push-document').value, 'application/yaml');
    } catch (e) {
      const b = e.body && typeof e.body === 'object' ? e.body : {};
      $('push-result').textContent = (b.message || e.message) + (b.serving ? ' (revision ' + b.serving + ' serving)' : '');
      showProblems(e.problems);
      loadConfig(false).catch((err) => banner(err.message)); // the refused revision is kept too
      return;
    }
    $('push-result').textContent = r.data.status + ': ' + r.data.message + ' (revision ' + r.data.serving + ' serving)';
    showProblems(r.data.warnings || []);
    loadConfig(false).catch((e) => banner(e.message));
  });

  // Certificates: validity and ACME state.
  async function loadCertificates() {
    const r = await api('GET', 'certificates');
    const now = Date.now();
    table($('certificates'), ['Certificate', 'Source', 'Names', 'Not after', 'Days left', 'ACME'], r.data.certificates.map((c) => {
      const days = c.notAfter ? Math.floor((new Date(c.notAfter) - now) / 864e5) : null;
      let acme = '';
      if (c.acme) {
        acme = (c.acme.ordering ? 'ordering' : 'idle') + (c.acme.renewAt ? '; renews ' + when(c.acme.renewAt) : '') +
          (c.acme.nextOrder ? '; next order ' + when(c.acme.nextOrder) : '') +
          (c.acme.failures ? '; ' + c.acme.failures + ' failures, last: ' + c.acme.lastError + ' at ' + when(c.acme.lastErrorAt) : '');
      }
      return el('tr', { 'data-certificate': c.id }, el('td', {}, c.id), el('td', {}, c.source), el('td', {}, (c.names || []).join(', ')),
        el('td', {}, c.pending ? 'pending' : when(c.notAfter)),
        el('td', { class: days !== null && days < 14 ? 'warn' : '' }, days === null ? '' : String(days)), el('td', {}, acme));
    }));
  }

  start();
})();
