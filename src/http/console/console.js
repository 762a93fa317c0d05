// console.js — the approver's console: pending approvals arrive live (server-sent events) and are decided by digest; the sandboxes and the audit log.
// Everything shown comes from requests under review, hostile by definition: it enters the page
// as text nodes only (textContent, never innerHTML), so no value can become markup or script.
'use strict';

// New calls arrive on a live stream (GET /v1/approvals/events) the moment they are queued. Polling
// stays as the safety net, slow on purpose: a page whose stream broke still works, and a test that
// wants a call on screen within a second can only pass through the stream.
const POLL_MS = 5000;
const RECONNECT_MS = 1000;
const TOKEN_KEY = 'airlock.approver-token';
const $ = (id) => document.getElementById(id);

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  view: 'approvals',
  cards: new Map(), // approval id -> {li, item, deadline, countdown}
  rules: new Map(), // rule name -> rule
  polling: null,
  live: null, // the stream's AbortController while signed in
  generation: 0, // of the newest approvals list shown
  liveTimer: null,
};

// el('span', {class: 'x'}, 'text', child...): an element with attributes and text or element children.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

// The token travels in the Authorization header of each request, never in a cookie: a page of
// another site can make the browser send cookies, not this header (no CORS is ever granted).
async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store', credentials: 'omit'});
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  return {status: r.status, data};
}

// ---- sign-in ---------------------------------------------------------------------------------

function showLogin(message) {
  stopPolling();
  stopLive();
  document.body.dataset.state = 'login';
  $('login').hidden = false;
  for (const v of document.querySelectorAll('.view')) v.hidden = true;
  $('login-error').textContent = message || '';
  $('signout').hidden = true;
  $('who').textContent = '';
  $('token').focus();
}

function signedIn() {
  document.body.dataset.state = 'ready';
  $('login').hidden = true;
  $('signout').hidden = !state.token;
  $('who').textContent = state.token ? 'approver token' : 'local approver';
  show(state.view);
  loadRules();
  startPolling();
  startLive();
}

// A request the server refused as unauthenticated or not an approver's: back to the token form.
function refused(r) {
  if (r.status === 401 || r.status === 403) {
    const why = r.status === 401 ? 'The server does not know this token.' : 'This credential is not an approver\'s.';
    showLogin(state.token || r.status === 403 ? why : '');
    return true;
  }
  return false;
}

async function tryToken(token) {
  state.token = token;
  // The audit route answers approvers only: a client's token is told apart from an approver's.
  const r = await api('GET', '/v1/audit?limit=1');
  if (refused(r)) return;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  signedIn();
}

// ---- views ----------------------------------------------------------------------------------

function show(view) {
  state.view = view;
  for (const b of document.querySelectorAll('.tab')) b.setAttribute('aria-pressed', String(b.dataset.view === view));
  for (const v of document.querySelectorAll('.view')) v.hidden = v.id !== 'view-' + view;
  if (view === 'audit') loadAudit();
  if (view === 'sandboxes') loadSandboxes();
}

// ---- approvals ------------------------------------------------------------------------------

async function loadRules() {
  const r = await api('GET', '/v1/console/rules');
  if (r.status !== 200 || !r.data) return;
  state.rules = new Map(r.data.rules.map((x) => [x.name, x]));
  for (const c of state.cards.values()) c.li.replaceWith(c.li = card(c.item));
}

// The stream and the poll both bring the whole list; each says which change of the queue it is at
// least as new as. An older list arriving late (a poll sent before the change the stream already
// showed) is ignored, or it would take the new card away again. A new stream's first list is taken
// as it is (a restarted server counts from 0 again).
function showApprovals(data, fresh) {
  if (typeof data.generation === 'number') {
    if (data.generation < state.generation && !fresh) return;
    state.generation = data.generation;
  }
  update(data.approvals || []);
  $('approvals-status').textContent = data.enabled ? '' : 'This server has no approvals queue (approval.channels lacks http).';
}

// The live stream: fetch() (EventSource cannot send the Authorization header) read chunk by chunk,
// split into server-sent events; each "approvals" event carries the whole pending list. When it
// ends or fails, it reconnects; meanwhile polling keeps the page right.
function stopLive() {
  clearTimeout(state.liveTimer);
  if (state.live) state.live.abort();
  state.live = null;
  document.body.dataset.live = 'off';
}

function onEvent(text, fresh) {
  let name = 'message';
  const data = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (name !== 'approvals' || !data.length) return;
  try { showApprovals(JSON.parse(data.join('\n')), fresh); return true; } catch (e) { /* a torn event: the next one or a poll repairs it */ }
}

async function startLive() {
  stopLive();
  const ctl = new AbortController();
  state.live = ctl;
  try {
    const headers = state.token ? {Authorization: 'Bearer ' + state.token} : {};
    const r = await fetch('/v1/approvals/events', {headers, cache: 'no-store', credentials: 'omit', signal: ctl.signal});
    if (r.status === 401 || r.status === 403) { refused({status: r.status}); return; }
    if (r.status === 404) { state.live = null; document.body.dataset.live = 'none'; return; } // no queue: polling says so
    if (r.ok && r.body) {
      document.body.dataset.live = 'sse';
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '', fresh = true;
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buf += dec.decode(value, {stream: true});
        for (let i; (i = buf.indexOf('\n\n')) >= 0;) {
          if (onEvent(buf.slice(0, i), fresh)) fresh = false;
          buf = buf.slice(i + 2);
        }
      }
    }
  } catch (e) { /* aborted, or the connection dropped */ }
  if (state.live !== ctl) return; // stopped, or replaced by a newer stream
  document.body.dataset.live = 'off';
  state.liveTimer = setTimeout(startLive, RECONNECT_MS);
}

function startPolling() {
  stopPolling();
  const tick = async () => {
    try {
      const r = await api('GET', '/v1/approvals');
      if (refused(r)) return;
      if (r.status === 200 && r.data) showApprovals(r.data);
    } catch (e) {
      $('approvals-status').textContent = 'The server does not answer; retrying.';
    }
    if (state.polling) state.polling = setTimeout(tick, POLL_MS);
  };
  state.polling = setTimeout(tick, 0);
}

function stopPolling() {
  if (state.polling) clearTimeout(state.polling);
  state.polling = null;
}

// Cards already shown keep their element (and keyboard focus); new ones are appended, decided or
// expired ones leave.
function update(list) {
  const now = Date.now();
  const seen = new Set();
  for (const item of list) {
    seen.add(item.id);
    const c = state.cards.get(item.id);
    if (c && c.item.digest === item.digest) continue;
    const li = card(item);
    if (c) c.li.replaceWith(li);
    else $('approvals').append(li);
    state.cards.set(item.id, {li, item, deadline: now + item.timeout_ms - item.age_ms});
  }
  for (const [id, c] of state.cards) {
    if (seen.has(id) || c.decided) continue;
    c.li.remove();
    state.cards.delete(id);
  }
  $('pending-count').textContent = String(list.length);
  $('approvals-empty').hidden = list.length > 0;
  document.body.dataset.pending = String(list.length);
  countdown();
}

function parseReason(reason) {
  const m = /^risk (\w+) \(rule (.*?)\)/.exec(reason || '');
  return m ? {level: m[1], rule: m[2]} : {level: '?', rule: '?'};
}

function fact(dl, name, value, cls) {
  dl.append(el('dt', {text: name}), el('dd', cls ? {class: cls} : {}, ...(Array.isArray(value) ? value : [value])));
}

function card(item) {
  const why = parseReason(item.reason);
  const req = item.request || {};
  const li = el('li', {class: 'card', tabindex: '0', 'data-id': String(item.id), 'aria-label': 'call ' + item.id + ' by ' + item.principal});
  li.dataset.digest = item.digest;
  const dl = el('dl', {class: 'facts'});
  fact(dl, 'Principal', item.principal || '(anonymous)');
  fact(dl, 'Tool', item.tool);
  fact(dl, 'Risk', why.level, 'risk risk-' + why.level);
  fact(dl, 'Rule', why.rule, 'rule');
  const net = req.network_enabled === true;
  fact(dl, 'Network', net ? 'enabled' : 'none (loopback only)');
  if (net) fact(dl, 'Domains', Array.isArray(req.allowed_domains) && req.allowed_domains.length ? req.allowed_domains.join(', ') : '(the profile\'s allowlist)');
  for (const [k, v] of Object.entries(req)) {
    if (['code', 'network_enabled', 'allowed_domains'].includes(k)) continue;
    fact(dl, k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  fact(dl, 'Code', (item.code_bytes || 0) + ' bytes');
  fact(dl, 'Digest', item.digest, 'digest');
  fact(dl, 'Time left', el('span', {class: 'countdown'}));
  li.append(dl);
  const marks = patternMarks(why.rule, item, dl);
  if (typeof req.code === 'string') li.append(codeView(req.code, marks, req.language));
  const ok = el('button', {type: 'button', class: 'approve', text: 'Approve (a)'});
  const no = el('button', {type: 'button', class: 'deny', text: 'Deny (d)'});
  ok.addEventListener('click', () => decide(li, true));
  no.addEventListener('click', () => decide(li, false));
  li.append(el('div', {class: 'actions'}, ok, no, el('span', {class: 'outcome', role: 'status'})));
  return li;
}

// Marks where the deciding rule's patterns matched the code: the server's own matches (item.marks,
// found by the same PCRE2 engine that classified the call), never a JavaScript re-run of the
// pattern, which reads PCRE differently (\h is "h" to a RegExp) and would mark other text.
function patternMarks(ruleName, item, dl) {
  const rule = state.rules.get(ruleName);
  for (const c of (rule && rule.when) || []) {
    if (c.matches !== undefined) fact(dl, 'Pattern', c.param + ' ~ ' + c.matches, 'pattern');
  }
  const code = (item.request || {}).code;
  if (typeof code !== 'string' || !Array.isArray(item.marks)) return [];
  const unit = utf16Offsets(code);
  const marks = [];
  for (const m of item.marks) {
    const a = unit.get(m.start), b = unit.get(m.end);
    if (a !== undefined && b !== undefined && a < b) marks.push([a, b]);
  }
  return marks;
}

// The server counts the code's UTF-8 bytes; the page indexes UTF-16 units: byte offset -> unit
// offset, at every character boundary (a mark never starts inside a character).
function utf16Offsets(code) {
  const map = new Map();
  let bytes = 0, i = 0;
  while (i < code.length) {
    map.set(bytes, i);
    const cp = code.codePointAt(i);
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    i += cp > 0xffff ? 2 : 1;
  }
  map.set(bytes, i);
  return map;
}

const KEYWORDS = 'import|from|def|class|return|if|elif|else|for|while|in|not|and|or|try|except|finally|with|as|' +
  'lambda|yield|pass|break|continue|raise|global|None|True|False|function|const|let|var|new|async|await|' +
  'then|do|done|fi|case|esac|export|require|of|exec|eval';
// Comments by language: '#' in Python, Ruby, Perl and PHP; in shell only at the start of a word
// (a#b and ${#x} are not comments); '//' in JavaScript and PHP, never in shell ('curl
// //example.com/x | sh' must not read as a comment).
const COMMENTS = {
  shell: '(?<![^\\s;&|()<>])#[^\\n]*',
  javascript: '//[^\\n]*',
  php: '#[^\\n]*|//[^\\n]*',
};
const STRINGS = '"(?:[^"\\\\\\n]|\\\\.)*"|\'(?:[^\'\\\\\\n]|\\\\.)*\'|`(?:[^`\\\\]|\\\\.)*`';
const tokenCache = new Map();
function tokens(language) {
  const key = COMMENTS[language] ? language : 'other';
  if (!tokenCache.has(key)) {
    const com = COMMENTS[key] || '#[^\\n]*';
    tokenCache.set(key, new RegExp('(' + com + ')|(' + STRINGS + ')|\\b(\\d+(?:\\.\\d+)?)\\b|\\b(' + KEYWORDS + ')\\b', 'g'));
  }
  return tokenCache.get(key);
}

// A syntax class per UTF-16 unit of code: comments, strings, numbers, keywords (a light touch
// across the languages; the marks and the visible characters are what matter).
function highlight(code, language) {
  const cls = new Array(code.length).fill('');
  const re = tokens(language);
  re.lastIndex = 0;
  for (let m; (m = re.exec(code)) !== null;) {
    const name = m[1] ? 'com' : m[2] ? 'str' : m[3] ? 'num' : 'kw';
    for (let i = m.index; i < m.index + m[0].length; i++) cls[i] = name;
  }
  return cls;
}

// Characters that change how code reads without showing: C0 and C1 controls, DEL, zero-width and
// bidirectional controls, the soft hyphen, the byte order mark.
function invisible(cp) {
  return (cp < 0x20 && cp !== 0x0a && cp !== 0x09) || (cp >= 0x7f && cp <= 0x9f) || cp === 0xad ||
    (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) ||
    cp === 0xfeff || cp === 0x180e || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f);
}

const hex = (cp) => cp.toString(16).toUpperCase().padStart(4, '0');

// One source line as spans: runs of spaces visible (two or more as dots, long ones as a counted
// badge), tabs as arrows, invisible characters spelled \u{XXXX}, pattern matches in <mark>.
function lineNodes(code, from, to, syn, marked) {
  const td = el('td', {class: 'src'});
  let i = from;
  const put = (text, cls, at) => {
    const span = el(marked[at] ? 'mark' : 'span', cls ? {class: cls} : {}, text);
    td.append(span);
  };
  while (i < to) {
    const cp = code.codePointAt(i);
    const w = cp > 0xffff ? 2 : 1;
    if (code[i] === ' ') {
      let j = i;
      while (j < to && code[j] === ' ') j++;
      const n = j - i;
      if (n === 1 && j < to) put(' ', syn[i], i);
      else if (n <= 16) put('\u00b7'.repeat(n), 'ws', i);
      else put('\u2423\u00d7' + n, 'ws-run', i);
      i = j;
      continue;
    }
    if (code[i] === '\t') { put('\u2192   ', 'ws', i); i++; continue; }
    if (invisible(cp)) {
      const s = el(marked[i] ? 'mark' : 'span', {class: 'ctl', title: 'U+' + hex(cp)}, '\\u{' + hex(cp) + '}');
      td.append(s);
      i += w;
      continue;
    }
    let j = i + w;
    while (j < to && syn[j] === syn[i] && marked[j] === marked[i] && code[j] !== ' ' && code[j] !== '\t' &&
      !invisible(code.codePointAt(j))) j += code.codePointAt(j) > 0xffff ? 2 : 1;
    put(code.slice(i, j), syn[i], i);
    i = j;
  }
  return td;
}

function codeView(code, marks, language) {
  const syn = highlight(code, language);
  const marked = new Uint8Array(code.length);
  for (const [a, b] of marks) marked.fill(1, a, b);
  const body = el('tbody');
  let start = 0, n = 1;
  for (;;) {
    const end = code.indexOf('\n', start);
    const stop = end < 0 ? code.length : end;
    body.append(el('tr', {}, el('td', {class: 'ln', text: String(n++)}), lineNodes(code, start, stop, syn, marked)));
    if (end < 0) break;
    start = end + 1;
  }
  const pre = el('div', {class: 'code', role: 'region', 'aria-label': 'the code, every character shown'}, el('table', {}, body));
  pre.dataset.marks = String(marks.length);
  return pre;
}

function countdown() {
  const now = Date.now();
  for (const c of state.cards.values()) {
    const span = c.li.querySelector('.countdown');
    if (!span || c.decided) continue;
    const left = Math.max(0, Math.round((c.deadline - now) / 1000));
    span.textContent = left > 0 ? Math.floor(left / 60) + ':' + String(left % 60).padStart(2, '0') : 'expired: a denial';
    span.classList.toggle('low', left <= 10);
  }
}

// The decision names the digest of the request on screen: if the call in the queue is not that
// request any more, the server refuses it (409) and nothing runs.
async function decide(li, approve) {
  const id = li.dataset.id;
  const c = state.cards.get(Number(id));
  if (!c || c.decided) return;
  const out = li.querySelector('.outcome');
  out.className = 'outcome';
  out.textContent = approve ? 'Approving…' : 'Denying…';
  const body = approve ? {approve: true, digest: li.dataset.digest} : {approve: false};
  const r = await api('POST', '/v1/approvals/' + encodeURIComponent(id), body);
  if (r.status === 200 || r.status === 204) {
    c.decided = true;
    li.classList.add('gone');
    li.dataset.outcome = approve ? 'approved' : 'denied';
    out.textContent = approve ? 'Approved: it runs.' : 'Denied.';
    for (const b of li.querySelectorAll('button')) b.disabled = true;
    setTimeout(() => { li.remove(); state.cards.delete(c.item.id); }, 4000);
    return;
  }
  if (r.status === 401) { refused(r); return; }
  const msg = r.data && r.data.error ? r.data.error : 'HTTP ' + r.status;
  li.dataset.outcome = r.status === 409 ? 'refused' : 'error';
  out.className = 'outcome refused';
  out.textContent = (r.status === 409 ? 'Refused: the request changed. ' : r.status === 404 ? 'Gone (decided or expired). ' : 'Failed. ') + msg;
}

// ---- sandboxes -------------------------------------------------------------------------------

const SANDBOX_POLL_MS = 2000;

function duration(ms) {
  const s = Math.floor(ms / 1000);
  return s < 60 ? s + ' s' : s < 3600 ? Math.floor(s / 60) + ' min' : (s / 3600).toFixed(1) + ' h';
}

function bytes(n) {
  if (n === null || n === undefined) return '—';
  if (n >= 2 ** 30) return (n / 2 ** 30).toFixed(1) + ' GiB';
  return n < 1 << 20 ? (n / 1024).toFixed(0) + ' KiB' : (n / (1 << 20)).toFixed(1) + ' MiB';
}

// The image a sandbox was made with: its name and a short digest (the whole one on hover), or the
// host's own system directories.
function imageCell(x) {
  if (!x.image_digest) return el('td', {text: x.image || 'host'});
  return el('td', {title: x.image_digest}, x.image + ' ', el('span', {class: 'digest', text: x.image_digest.slice(0, 19) + '…'}));
}

// A sandbox's listening ports, each a link to its proxied path. The path is the owner's: an
// approver is not let in there (404) unless the owner gave a port token. It opens in a new tab
// without an opener or referrer, and whatever the sandbox serves there runs under a CSP sandbox
// (an opaque origin): it can read neither this page's storage (the approver's token) nor the API.
function portsCell(x) {
  const ports = x.ports || [];
  if (!ports.length) return el('td', {text: '—'});
  const td = el('td', {class: 'ports'});
  ports.forEach((p, i) => {
    if (i) td.append(' ');
    td.append(el('a', {href: p.url, target: '_blank', rel: 'noopener noreferrer',
      title: p.address + ':' + p.port + ' in the sandbox (its owner, or a port token, opens it)', text: String(p.port)}));
  });
  return td;
}

// What runs in a sandbox: an exec, nothing, or nothing at all (paused: every process frozen in
// place, since when and by whom).
function execCell(x) {
  if (x.on_disk) return el('td', {class: 'paused ondisk', title: 'paused to disk by ' + (x.paused_by || '?') +
    ': its processes and memory released, its files kept; a resume or its next call makes it again', text: 'on disk ' + duration(x.paused_ms)});
  if (x.state === 'paused') return el('td', {class: 'paused', title: 'paused by ' + (x.paused_by || '?'), text: 'paused ' + duration(x.paused_ms)});
  return el('td', {text: x.exec_running ? 'running' : '—'});
}

// Where a sandbox's files live: kept in the state directory (what its mirror holds, of its disk
// limit), or in memory only, ending with the server.
function keptCell(x) {
  if (!x.kept) return el('td', {class: 'volatile', title: 'not kept: its files end with the server (--state-dir none)', text: 'memory only'});
  return el('td', {class: 'kept qty', title: 'kept in the state directory: its files outlive a restart of the server' +
    (x.layered ? ' (beside the snapshot or fork layer it stands on)' : ''), text: bytes(x.stored_bytes) + ' of ' + bytes(x.disk_bytes)});
}

function sandboxRow(x) {
  const destroy = el('button', {type: 'button', class: 'destroy', text: 'Destroy', 'aria-label': 'Destroy sandbox ' + x.id + ' of ' + x.owner});
  destroy.addEventListener('click', () => confirmDestroy(tr, x));
  // Pausing freezes what runs in place; nothing is lost, and a resume (or the owner's next call) goes on.
  const paused = x.state === 'paused';
  const hold = el('button', {type: 'button', class: paused ? 'resume' : 'pause', text: paused ? 'Resume' : 'Pause',
    'aria-label': (paused ? 'Resume' : 'Pause') + ' sandbox ' + x.id + ' of ' + x.owner});
  hold.addEventListener('click', () => pauseSandbox(tr, x, !paused));
  // To disk: its files kept in the state directory, its processes and memory released.
  const disk = el('button', {type: 'button', class: 'todisk', text: 'To disk',
    'aria-label': 'Pause sandbox ' + x.id + ' of ' + x.owner + ' to disk (its processes end, its files are kept)'});
  disk.addEventListener('click', () => pauseSandbox(tr, x, true, true));
  disk.hidden = !x.kept || !!x.on_disk;
  const tr = el('tr', {'data-id': x.id},
    el('td', {text: x.id}), el('td', {text: x.owner}), el('td', {text: x.profile}), imageCell(x),
    el('td', {text: x.network + (x.hosts ? ': ' + x.hosts : '')}), el('td', {class: 'qty', text: duration(x.age_ms)}),
    el('td', {class: 'qty', text: duration(x.idle_ms)}), execCell(x),
    el('td', {class: 'qty', text: x.cpu_s === null ? '—' : x.cpu_s.toFixed(2) + ' s'}),
    el('td', {class: 'qty', text: bytes(x.memory_bytes)}), el('td', {class: 'qty', text: bytes(x.peak_memory_bytes)}),
    keptCell(x), portsCell(x), el('td', {class: 'act'}, el('div', {class: 'actbox'}, hold, disk, destroy)));
  return tr;
}

async function pauseSandbox(tr, x, pause, toDisk) {
  for (const b of tr.querySelectorAll('button')) b.disabled = true;
  const r = await api('POST', '/v1/admin/sandboxes/' + encodeURIComponent(x.id) + (pause ? '/pause' : '/resume') + (toDisk ? '?to_disk=true' : ''));
  if (refused(r)) return;
  $('sandboxes-status').textContent = r.status === 200
    ? (pause ? 'Paused ' : 'Resumed ') + x.id + ' of ' + x.owner + (toDisk ? ' to disk.' : '.') +
      (r.data && r.data.released ? ' Not kept: ' + r.data.released + '.' : '')
    : 'Not ' + (pause ? 'paused' : 'resumed') + ': ' + (r.data && r.data.error ? r.data.error : 'HTTP ' + r.status);
  document.body.dataset.paused = x.id + ':' + (toDisk ? 'disk' : pause ? 'pause' : 'resume') + ':' + r.status;
  loadSandboxes();
}

// Destroying is a second, explicit step: the row asks, with the focus on the confirming button
// (Enter confirms, Escape or Cancel goes back). The table is not refreshed while it asks.
function confirmDestroy(tr, x) {
  state.confirming = x.id;
  const yes = el('button', {type: 'button', class: 'confirm', text: 'Destroy it',
    'aria-label': 'Destroy sandbox ' + x.id + ' of ' + x.owner + ' and everything running in it'});
  const no = el('button', {type: 'button', class: 'cancel', text: 'Cancel'});
  const cell = tr.querySelector('td.act .actbox');
  const back = () => { state.confirming = null; loadSandboxes(); };
  yes.addEventListener('click', () => destroySandbox(tr, x));
  no.addEventListener('click', back);
  cell.replaceChildren(el('span', {class: 'ask', text: 'Sure?'}), yes, no);
  tr.classList.add('asking');
  cell.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { ev.preventDefault(); back(); } });
  yes.focus();
}

async function destroySandbox(tr, x) {
  for (const b of tr.querySelectorAll('button')) b.disabled = true;
  const r = await api('DELETE', '/v1/admin/sandboxes/' + encodeURIComponent(x.id));
  state.confirming = null;
  if (refused(r)) return;
  if (r.status === 200) {
    tr.remove();
    $('sandboxes-status').textContent = 'Destroyed ' + x.id + ' of ' + x.owner + '.';
  } else {
    $('sandboxes-status').textContent = 'Not destroyed: ' + (r.data && r.data.error ? r.data.error : 'HTTP ' + r.status);
  }
  document.body.dataset.destroyed = x.id + ':' + r.status;
  clearTimeout(state.sandboxTimer);
  state.sandboxTimer = setTimeout(loadSandboxes, SANDBOX_POLL_MS);
}

async function loadSandboxes() {
  clearTimeout(state.sandboxTimer);
  if (state.view !== 'sandboxes') return;
  if (state.confirming) { state.sandboxTimer = setTimeout(loadSandboxes, SANDBOX_POLL_MS); return; }
  const r = await api('GET', '/v1/admin/sandboxes');
  if (refused(r)) return;
  if (state.confirming) return; // the approver began a confirmation meanwhile: keep the rows as they are
  const body = $('sandboxes').tBodies[0];
  if (r.status === 200 && r.data) {
    const all = r.data.sandboxes;
    body.replaceChildren(...all.map(sandboxRow));
    const paused = all.filter((x) => x.state === 'paused').length, kept = all.filter((x) => x.kept).length;
    const onDisk = all.filter((x) => x.on_disk).length;
    $('sandboxes-summary').textContent = all.length + ' live: ' + (all.length - paused) + ' running, ' + paused + ' paused (' + onDisk + ' to disk); ' + kept + ' kept on disk';
    document.body.dataset.sandboxes = String(all.length);
  } else {
    $('sandboxes-status').textContent = r.data && r.data.error ? r.data.error : 'HTTP ' + r.status;
  }
  await loadSnapshots();
  state.sandboxTimer = setTimeout(loadSandboxes, SANDBOX_POLL_MS);
}

// ---- snapshots (in the sandboxes view) ---------------------------------------------------------

function snapshotRow(x) {
  const del = el('button', {type: 'button', class: 'destroy', text: 'Delete', 'aria-label': 'Delete snapshot ' + x.snapshot_id + ' of ' + x.owner});
  const tr = el('tr', {'data-id': x.snapshot_id},
    el('td', {text: x.snapshot_id}), el('td', {text: x.name === null ? '—' : x.name}), el('td', {text: x.owner}),
    el('td', {text: x.sandbox_id}), el('td', {class: 'qty', text: bytes(x.bytes)}), el('td', {class: 'qty', text: String(x.entries)}),
    el('td', {class: 'qty', text: duration(Math.max(0, Date.now() - x.created_unix_ms))}),
    el('td', {class: 'act'}, el('div', {class: 'actbox'}, del)));
  del.addEventListener('click', () => confirmDelete(tr, x));
  return tr;
}

// As a destroy: a second, explicit step, the focus on the confirming button.
function confirmDelete(tr, x) {
  state.confirming = 'snapshot:' + x.snapshot_id;
  const yes = el('button', {type: 'button', class: 'confirm', text: 'Delete it',
    'aria-label': 'Delete snapshot ' + x.snapshot_id + ' of ' + x.owner + ' (the sandboxes made from it keep their files)'});
  const no = el('button', {type: 'button', class: 'cancel', text: 'Cancel'});
  const cell = tr.querySelector('td.act .actbox');
  const back = () => { state.confirming = null; loadSandboxes(); };
  yes.addEventListener('click', () => deleteSnapshot(tr, x));
  no.addEventListener('click', back);
  cell.replaceChildren(el('span', {class: 'ask', text: 'Sure?'}), yes, no);
  tr.classList.add('asking');
  cell.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { ev.preventDefault(); back(); } });
  yes.focus();
}

async function deleteSnapshot(tr, x) {
  for (const b of tr.querySelectorAll('button')) b.disabled = true;
  const r = await api('DELETE', '/v1/admin/snapshots/' + encodeURIComponent(x.snapshot_id));
  state.confirming = null;
  if (refused(r)) return;
  if (r.status === 200) tr.remove();
  $('snapshots-status').textContent = r.status === 200 ? 'Deleted ' + x.snapshot_id + ' of ' + x.owner + '.'
    : 'Not deleted: ' + (r.data && r.data.error ? r.data.error : 'HTTP ' + r.status);
  document.body.dataset.snapdeleted = x.snapshot_id + ':' + r.status;
}

async function loadSnapshots() {
  const r = await api('GET', '/v1/admin/snapshots');
  if (refused(r) || state.confirming) return;
  if (r.status === 200 && r.data) {
    $('snapshots').tBodies[0].replaceChildren(...r.data.snapshots.map(snapshotRow));
    if (!/^Deleted|^Not deleted/.test($('snapshots-status').textContent)) {
      $('snapshots-status').textContent = r.data.snapshots.length ? r.data.snapshots.length + ' kept' : 'No snapshots.';
    }
    document.body.dataset.snapshots = String(r.data.snapshots.length);
  } else {
    $('snapshots-status').textContent = r.data && r.data.error ? r.data.error : 'HTTP ' + r.status;
  }
}

// ---- audit ----------------------------------------------------------------------------------

function isoOf(local) {
  if (!local) return '';
  const d = new Date(local);
  return isNaN(d) ? '' : d.toISOString();
}

async function loadAudit() {
  const f = $('audit-form').elements;
  const q = new URLSearchParams();
  q.set('limit', f.limit.value || '100');
  for (const k of ['principal', 'tool', 'decision']) if (f[k].value) q.set(k, f[k].value);
  if (isoOf(f.since.value)) q.set('since', isoOf(f.since.value));
  if (isoOf(f.until.value)) q.set('until', isoOf(f.until.value));
  // Only the latest request's answer is shown: an earlier, slower one must not replace the list
  // the approver filtered since.
  const seq = state.auditSeq = (state.auditSeq || 0) + 1;
  const r = await api('GET', '/v1/audit?' + q.toString());
  if (seq !== state.auditSeq) return;
  if (refused(r)) return;
  const list = $('audit');
  list.replaceChildren();
  if (r.status !== 200 || !r.data) {
    $('audit-status').textContent = r.data && r.data.error ? r.data.error : 'HTTP ' + r.status;
    return;
  }
  const recs = r.data.records.slice().reverse();
  $('audit-status').textContent = recs.length + ' records, newest first' + (r.data.skipped ? ' (' + r.data.skipped + ' torn lines skipped)' : '');
  document.body.dataset.auditCount = String(recs.length);
  for (const rec of recs) list.append(record(rec));
}

function record(rec) {
  const ap = rec.approval || {};
  const s = el('summary', {},
    el('span', {text: rec.time || ''}), el('span', {text: rec.event || ''}),
    el('span', {text: ((rec.client && rec.client.principal) || '') + (rec.client && rec.client.on_behalf_of ? ' for ' + rec.client.on_behalf_of : '')}),
    el('span', {text: rec.tool || ''}),
    el('span', {class: 'risk risk-' + ((rec.risk && rec.risk.level) || ''), text: (rec.risk && rec.risk.level) || ''}),
    el('span', {class: 'dec-' + (ap.decision || ''), text: (ap.decision || '') + (ap.by ? ' by ' + ap.by : '') + (ap.approver ? ' (' + ap.approver + ')' : '')}),
    el('span', {text: (rec.result && rec.result.status) || ''}));
  const d = el('details', {class: 'record'}, s, el('pre', {text: JSON.stringify(rec, null, 2)}));
  d.dataset.tool = rec.tool || '';
  d.dataset.decision = ap.decision || '';
  d.dataset.by = ap.by || '';
  return el('li', {}, d);
}

// ---- wiring ---------------------------------------------------------------------------------

function onKey(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const li = ev.target.closest && ev.target.closest('.card');
  if (!li || ev.target !== li) return; // typing elsewhere is typing
  if (ev.key === 'a') { ev.preventDefault(); decide(li, true); }
  if (ev.key === 'd') { ev.preventDefault(); decide(li, false); }
}

// `airlock console` prints a URL whose fragment holds its one-time token (a fragment is never sent
// to a server): it becomes this tab's token, and leaves the address bar.
function takeFragmentToken() {
  const m = /^#token=([0-9a-f]{16,128})$/.exec(location.hash);
  if (!m) return;
  state.token = m[1];
  sessionStorage.setItem(TOKEN_KEY, m[1]);
  history.replaceState(null, '', location.pathname + location.search);
}

function init() {
  takeFragmentToken();
  $('login-form').addEventListener('submit', (ev) => { ev.preventDefault(); tryToken($('token').value.trim()); $('token').value = ''; });
  $('signout').addEventListener('click', () => { sessionStorage.removeItem(TOKEN_KEY); state.token = ''; showLogin(''); });
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => show(b.dataset.view));
  $('audit-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadAudit(); });
  $('approvals').addEventListener('keydown', onKey);
  setInterval(countdown, 250);
  // With no token saved the page may still be the approver's: through a forwarded Unix socket
  // the server names the peer by uid. Otherwise the first request answers 401 and asks for one.
  tryToken(state.token);
}

document.addEventListener('DOMContentLoaded', init);
