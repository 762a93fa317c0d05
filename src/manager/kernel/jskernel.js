// jskernel.js - airlock's JavaScript kernel: runs the cells of one context in a vm context, framed on fd 0 (see manager/context.h).
//
// Embedded in airlock and started as `node -e <this text>`, confined as any exec. Cells run
// synchronously: the cell's time limit comes with the request and the vm enforces it (the
// manager's interrupt frame then finds the cell over; past the grace period it kills us).
'use strict';
const fs = require('fs');
const vm = require('vm');
const util = require('util');

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
const stream = (kind) => new Writable({
  write(chunk, enc, done) { send(kind, Buffer.from(chunk)); done(); },
});
const out = stream('o'), err = stream('e');
process.stdout.write = (chunk) => out.write(chunk);
process.stderr.write = (chunk) => err.write(chunk);
const cellConsole = new console.Console({ stdout: out, stderr: err });
const sandbox = {
  require, module, console: cellConsole, process, Buffer, URL, TextEncoder, TextDecoder,
  setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate, queueMicrotask,
};
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);
let count = 0;

function cell(req) {
  const textMax = Number(req.text_max) || (1 << 20);
  const res = { exit_code: 0, value: null, error: null, images: [], files: [], interrupted: false };
  const t0 = process.cpuUsage();
  count++;
  try {
    const timeout = Number(req.timeout_ms) > 0 ? Number(req.timeout_ms) : undefined;
    const v = vm.runInContext(req.code, context, { filename: '<cell-' + count + '>', timeout });
    if (v !== undefined) {
      sandbox._ = v;
      const text = util.inspect(v, { depth: 4, maxArrayLength: 200, breakLength: 100 });
      res.value = { type: v === null ? 'null' : (v.constructor && v.constructor.name) || typeof v,
        text: text.slice(0, textMax), html: null, truncated: text.length > textMax };
    }
  } catch (e) {
    const timedOut = e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
    const name = e && e.name ? e.name : typeof e;
    res.error = { ename: timedOut ? 'TimeoutError' : name, evalue: e && e.message !== undefined ? String(e.message) : String(e),
      traceback: e && e.stack ? String(e.stack).split('\n').filter((l) => !/node:vm|\[eval\]|node:internal/.test(l)).join('\n')
        : String(e) };
    res.exit_code = 1;
    res.interrupted = timedOut;
    err.write(res.error.traceback + '\n');
  }
  res.processes_killed = killOthers(); // nothing the cell started outlives it
  const t1 = process.cpuUsage(t0);
  res.user_s = t1.user / 1e6;
  res.system_s = t1.system / 1e6;
  return res;
}

async function main() {
  send('h', Buffer.from(JSON.stringify({ pid: process.pid, version: process.version })));
  for (;;) {
    const head = readExact(5);
    const body = readExact(head.readUInt32BE(1));
    const kind = head.toString('latin1', 0, 1);
    if (kind !== 'x') continue; // 'i': the vm's own timeout already ended the cell
    send('r', Buffer.from(JSON.stringify(cell(JSON.parse(body.toString('utf8'))))));
    // One turn of the event loop between cells: libuv reaps the children killOthers killed.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
main();
