// jskernel.js - airlock's JavaScript kernel: runs the cells of one context in a vm context, framed on fd 0 (see manager/context.h).
//
// Embedded in airlock and started as `node --expose-internals -e <this text>`, confined as any
// exec. A cell's synchronous part runs under the vm's timeout; a cell that awaits (top-level
// `await`, the REPL's rewrite of it) or whose value is a Promise is awaited until the same time
// limit, and its value is the settled one. The manager's interrupt frame then finds the cell over;
// past the grace period it kills us (a synchronous loop after an await: the state is lost).
//
// What a cell leaves pending does not reach the next one unnoticed: its timers and intervals are
// cancelled when it ends (counted: timers_cancelled), and output written from its callbacks after
// its end (each cell runs in an AsyncLocalStorage of its own, so every callback knows its cell) is
// dropped and counted in the next answer (late_output_bytes).
'use strict';
const fs = require('fs');
const vm = require('vm');
const util = require('util');
const { AsyncLocalStorage } = require('async_hooks');

// Node's own REPL rewrite of top-level await: declarations hoisted so they persist in the context,
// the last expression returned. Internal, hence --expose-internals (which gives the cell nothing
// it lacks: it already runs with this process's whole power, and the sandbox is the boundary).
let rewriteAwait = null;
try {
  rewriteAwait = require('internal/repl/await').processTopLevelAwait;
} catch (e) { /* another Node: top-level await is then refused with a clear error */ }

if (process.ppid !== 1) { // only beneath an exec's init: killOthers sweeps the pid namespace
  process.stderr.write("airlock kernel: not in an exec's pid namespace\n");
  process.exit(2);
}
const SOCK = 0;

function send(kind, payload) {
  const head = Buffer.alloc(5);
  head.write(kind, 0, 'latin1');
  head.writeUInt32BE(payload.length, 1);
  const frame = Buffer.concat([head, payload]);
  for (let off = 0; off < frame.length;) off += fs.writeSync(SOCK, frame, off);
}

function readExact(n) {
  const buf = Buffer.alloc(n);
  for (let off = 0; off < n;) {
    let got;
    try {
      got = fs.readSync(SOCK, buf, off, n - off, null);
    } catch (e) {
      if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
      throw e;
    }
    if (got === 0) process.exit(0); // the manager closed the channel: the context is deleted
    off += got;
  }
  return buf;
}

// Every live process of this exec's pid namespace but its init and us: the cell's.
function others() {
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || name === '1' || Number(name) === process.pid) continue;
    let stat;
    try { stat = fs.readFileSync('/proc/' + name + '/stat', 'latin1'); } catch (e) { continue; }
    const state = stat[stat.lastIndexOf(')') + 2];
    if (state !== 'Z' && state !== 'X') found.push(Number(name));
  }
  return found;
}

function killOthers() {
  let killed = 0;
  for (let i = 0; i < 400; i++) {
    const pids = others();
    if (!pids.length) break;
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL'); killed++; } catch (e) { /* gone */ }
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  }
  return killed;
}

const { Writable } = require('stream');
const als = new AsyncLocalStorage();
let current = 0; // the running cell's number, 0 between cells
let lateBytes = 0;
const stream = (kind) => {
  const w = new Writable({ write(chunk, enc, done) { send(kind, Buffer.from(chunk)); done(); } });
  const raw = w.write.bind(w);
  // Only the running cell's own code writes: a callback of an earlier cell is counted, not sent.
  w.write = (chunk, enc, cb) => {
    if (!current || als.getStore() !== current) {
      lateBytes += Buffer.byteLength(typeof chunk === 'string' ? chunk : Buffer.from(chunk));
      if (typeof enc === 'function') enc(); else if (typeof cb === 'function') cb();
      return true;
    }
    return raw(chunk, enc, cb);
  };
  return { w, raw };
};
const outS = stream('o'), errS = stream('e');
const out = outS.w, err = errS.w;
process.stdout.write = (chunk, enc, cb) => out.write(chunk, enc, cb);
process.stderr.write = (chunk, enc, cb) => err.write(chunk, enc, cb);
const cellConsole = new console.Console({ stdout: out, stderr: err });

// The cell's timers, so that those it leaves pending are cancelled at its end.
const pending = new Map();
function tracked(set, clear, once) {
  return (fn, ...args) => {
    let h = null;
    const cb = typeof fn !== 'function' ? fn : (...a) => {
      if (once) pending.delete(h);
      return fn(...a);
    };
    h = set(cb, ...args);
    pending.set(h, clear);
    return h;
  };
}
const untrack = (clear) => (h) => { pending.delete(h); clear(h); };
const sandbox = {
  require, module, console: cellConsole, process, Buffer, URL, TextEncoder, TextDecoder, queueMicrotask,
  setTimeout: tracked(setTimeout, clearTimeout, true), clearTimeout: untrack(clearTimeout),
  setInterval: tracked(setInterval, clearInterval, false), clearInterval: untrack(clearInterval),
  setImmediate: tracked(setImmediate, clearImmediate, true), clearImmediate: untrack(clearImmediate),
};
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);
let count = 0;

// An exception of a cell's callback must not end the kernel (and every context's state with it):
// it is the running cell's stderr, or late output of the cell it came from.
const uncaught = (e) => {
  err.write('Uncaught ' + errorOf(e).error.traceback + '\n');
};
process.on('uncaughtException', uncaught);
process.on('unhandledRejection', uncaught);

const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') &&
  typeof v.then === 'function';

class CellTimeout extends Error {}

// Settles p, or rejects with CellTimeout once ms have passed (no limit: ms undefined).
function within(p, ms) {
  if (ms === undefined) return Promise.resolve(p);
  let t = null;
  const limit = new Promise((_, reject) => { t = setTimeout(() => reject(new CellTimeout()), Math.max(ms, 1)); });
  return Promise.race([Promise.resolve(p), limit]).finally(() => clearTimeout(t));
}

// The code to run: as written, or, when it awaits at top level (not valid in a script), rewritten.
function source(code, filename) {
  if (!/\bawait\b/.test(code)) return { code, wrapped: false };
  try {
    new vm.Script(code, { filename });
    return { code, wrapped: false };
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    const w = rewriteAwait ? rewriteAwait(code) : null;
    if (!rewriteAwait && /await/.test(e.message)) throw new SyntaxError('top-level await needs a Node with its REPL rewrite');
    return w === null ? { code, wrapped: false } : { code: w, wrapped: true };
  }
}

async function evaluate(req, cellNo, deadline) {
  const filename = '<cell-' + cellNo + '>';
  const src = source(req.code, filename);
  const left = () => (deadline === undefined ? undefined : Math.max(1, deadline - Date.now()));
  let v = als.run(cellNo, () => vm.runInContext(src.code, context, { filename, timeout: left() }));
  if (src.wrapped) {
    const r = await within(v, left());
    v = r === undefined || r === null ? undefined : r.value;
  }
  // A Promise as the value: the cell's value is what it settles to, within the same limit.
  if (isThenable(v)) v = await within(v, left());
  return v;
}

function errorOf(e) {
  const timedOut = e instanceof CellTimeout || (e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT');
  const name = timedOut ? 'TimeoutError' : e && e.name ? e.name : typeof e;
  const evalue = timedOut ? 'the cell ran past its time limit' : e && e.message !== undefined ? String(e.message) : String(e);
  const stack = e && e.stack && !(e instanceof CellTimeout) ? String(e.stack).split('\n')
    .filter((l) => !/node:vm|\[eval\]|node:internal|node:async_hooks/.test(l)).join('\n') : name + ': ' + evalue;
  return { error: { ename: name, evalue, traceback: stack }, timedOut };
}

async function cell(req) {
  const textMax = Number(req.text_max) || (1 << 20);
  const res = { exit_code: 0, value: null, error: null, images: [], files: [], interrupted: false };
  const t0 = process.cpuUsage();
  const cellNo = ++count;
  const deadline = Number(req.timeout_ms) > 0 ? Date.now() + Number(req.timeout_ms) : undefined;
  current = cellNo;
  try {
    const v = await evaluate(req, cellNo, deadline);
    if (v !== undefined) {
      sandbox._ = v;
      const text = util.inspect(v, { depth: 4, maxArrayLength: 200, breakLength: 100 });
      res.value = { type: v === null ? 'null' : (v.constructor && v.constructor.name) || typeof v,
        text: text.slice(0, textMax), html: null, truncated: text.length > textMax };
    }
  } catch (e) {
    const { error, timedOut } = errorOf(e);
    // Within the output limit, as every text of the answer: the manager takes no bigger one.
    res.error = { ename: String(error.ename).slice(0, 256), evalue: error.evalue.slice(0, textMax),
      traceback: error.traceback.slice(0, textMax) };
    res.exit_code = 1;
    res.interrupted = timedOut;
    errS.raw(res.error.traceback + '\n');
  }
  // One turn of the event loop while the cell is still current: a rejection nobody handled is
  // reported by Node after the microtasks drain, and belongs to this cell's stderr.
  await new Promise((resolve) => setImmediate(resolve));
  current = 0;
  res.timers_cancelled = pending.size;
  for (const [h, clear] of pending) clear(h);
  pending.clear();
  res.processes_killed = killOthers(); // nothing the cell started outlives it
  res.late_output_bytes = lateBytes;
  lateBytes = 0;
  const t1 = process.cpuUsage(t0);
  res.user_s = t1.user / 1e6;
  res.system_s = t1.system / 1e6;
  return res;
}

async function main() {
  // libuv's thread pool starts, all its threads at once, with the first work it is given: started
  // now, it is part of what the manager sees at our hello, not threads a cell left running (the
  // manager restarts a kernel whose cell left threads behind).
  await fs.promises.stat('/');
  send('h', Buffer.from(JSON.stringify({ pid: process.pid, version: process.version })));
  for (;;) {
    const head = readExact(5);
    const body = readExact(head.readUInt32BE(1));
    const kind = head.toString('latin1', 0, 1);
    if (kind !== 'x') continue; // 'i': the cell's own time limit already ended it
    send('r', Buffer.from(JSON.stringify(await cell(JSON.parse(body.toString('utf8'))))));
    // One turn of the event loop between cells: libuv reaps the children killOthers killed.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
main();
