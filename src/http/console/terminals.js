// terminals.js — the console's read-only view of the sandboxes' live terminal sessions, rendered by xterm.js (embedded at build time).
// What a session prints is the output of code under review, hostile by definition: it goes only
// into the terminal emulator's write(), which interprets it as a terminal would and puts text into
// the page as text, never as markup. The view sends nothing to a session: the routes it reads
// (GET /v1/admin/sandboxes/{id}/processes[/{pid}/output]) are the only ones an approver has there,
// and the emulator is made with its input disabled.
'use strict';

const TERMINALS_POLL_MS = 3000;
const term = {
  timer: null,
  watching: null, // {key, sandbox, pid, xterm, abort} while one session is shown
  sheet: null, // the constructed style sheet that carries xterm.js's own styles (see adoptStyles)
};

// xterm.js writes its layout (cell sizes, colours) into <style> elements it makes; the page's
// Content-Security-Policy (style-src 'self', no 'unsafe-inline') keeps the browser from applying
// them. Their text is xterm.js's own, made from its options and the cell size it measured — never
// from a session's output — so it is copied into one constructed style sheet (adoptedStyleSheets,
// which the policy does not govern) whenever xterm.js changes it. The policy itself stays as it is.
function adoptStyles(container) {
  if (!term.sheet) {
    term.sheet = new CSSStyleSheet();
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, term.sheet];
  }
  const sync = () => term.sheet.replaceSync([...container.querySelectorAll('style')].map((s) => s.textContent).join('\n'));
  new MutationObserver(sync).observe(container, {subtree: true, childList: true, characterData: true});
  sync();
}

function bytesOf(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function stopWatching() {
  const w = term.watching;
  term.watching = null;
  if (!w) return;
  w.abort.abort();
  w.xterm.dispose();
  $('terminal-screen').replaceChildren();
  $('terminal-title').textContent = '';
  delete document.body.dataset.watching;
}

// Follows the session's output (base64 NDJSON: a terminal's bytes are not always UTF-8) into the
// emulator until it ends, the approver looks elsewhere, or the stream breaks.
async function follow(w) {
  const path = `/v1/admin/sandboxes/${encodeURIComponent(w.sandbox)}/processes/${w.pid}/output?encoding=base64`;
  let r;
  try {
    r = await fetch(path, {headers: {Authorization: 'Bearer ' + state.token}, cache: 'no-store', credentials: 'omit',
      signal: w.abort.signal});
  } catch (e) { return; }
  if (r.status !== 200) {
    $('terminals-status').textContent = 'HTTP ' + r.status;
    return;
  }
  const reader = r.body.getReader();
  const text = new TextDecoder();
  let held = '';
  for (;;) {
    let chunk;
    try { chunk = await reader.read(); } catch (e) { return; }
    if (chunk.done) break;
    held += text.decode(chunk.value, {stream: true});
    const lines = held.split('\n');
    held = lines.pop();
    for (const line of lines) {
      if (!line) continue;
      let ev;
      try { ev = JSON.parse(line); } catch (e) { continue; }
      if (typeof ev.data === 'string' && ev.encoding === 'base64') w.xterm.write(bytesOf(ev.data));
      else if (ev.result || ev.error) $('terminal-title').textContent += ev.error ? ' · ' + ev.error : ' · ended';
    }
  }
}

function watch(x, p) {
  stopWatching();
  const xterm = new Terminal({cols: p.pty.cols, rows: p.pty.rows, disableStdin: true, scrollback: 2000,
    cursorBlink: false, fontSize: 13});
  const w = {key: x.id + '/' + p.pid, sandbox: x.id, pid: p.pid, xterm, abort: new AbortController()};
  term.watching = w;
  const screen = $('terminal-screen');
  xterm.open(screen);
  adoptStyles(screen);
  $('terminal-title').textContent = `${x.owner} · ${x.id} · pid ${p.pid} · ${p.command}`;
  document.body.dataset.watching = w.key;
  follow(w);
}

function sessionItem(x, p) {
  const b = el('button', {type: 'button', class: 'watch', text: 'Watch'});
  b.addEventListener('click', () => watch(x, p));
  return el('li', {'data-key': x.id + '/' + p.pid},
    el('span', {class: 'mono'}, x.id), ' · ', el('span', {}, x.owner || ''), ' · pid ' + p.pid + ' · ',
    el('span', {class: 'mono'}, p.command), ` · ${p.pty.cols}×${p.pty.rows} `, b);
}

// Every live sandbox's running terminal sessions; the one watched follows its size.
async function loadTerminals() {
  clearTimeout(term.timer);
  if (state.view !== 'terminals') { stopWatching(); return; }
  const r = await api('GET', '/v1/admin/sandboxes');
  if (refused(r)) return;
  const items = [];
  for (const x of r.status === 200 && r.data ? r.data.sandboxes : []) {
    const pr = await api('GET', `/v1/admin/sandboxes/${encodeURIComponent(x.id)}/processes`);
    for (const p of pr.status === 200 && pr.data ? pr.data.processes || [] : []) {
      if (!p.pty || !p.running) continue;
      items.push(sessionItem(x, p));
      const w = term.watching;
      if (w && w.key === x.id + '/' + p.pid && (w.xterm.cols !== p.pty.cols || w.xterm.rows !== p.pty.rows)) w.xterm.resize(p.pty.cols, p.pty.rows);
    }
  }
  $('terminals').replaceChildren(...items);
  $('terminals-status').textContent = r.status === 200 ? items.length + ' live' : 'HTTP ' + r.status;
  document.body.dataset.terminals = String(items.length);
  term.timer = setTimeout(loadTerminals, TERMINALS_POLL_MS);
}

document.addEventListener('DOMContentLoaded', () => {
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => loadTerminals());
});
