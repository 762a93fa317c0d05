// sdk.mjs — the official E2B JavaScript SDK (npm "e2b", unchanged) against airlock serve's E2B front end.
// Configured only as an E2B user would: E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (the first
// principal); E2B_OTHER_KEY is a second principal's key. Prints "ok: ..." per check; the first
// check that fails throws (exit 1).
import { Sandbox, CommandExitError, NotFoundError, SandboxNotFoundError, AuthenticationError } from 'e2b'

const other = process.env.E2B_OTHER_KEY
const marker = process.env.AL_MARKER || 'e2b-marker'

function check(cond, what, detail) {
  if (!cond) throw new Error(`FAILED: ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`)
  console.log(`ok: ${what}`)
}

async function rejects(p) {
  try {
    await p
  } catch (e) {
    return e
  }
  return null
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// ---- create, info, list --------------------------------------------------------------------------
const sbx = await Sandbox.create({ timeoutMs: 300_000, metadata: { suite: marker }, envs: { GREETING: 'hello' } })
check(/^sb-[0-9a-f]+$/.test(sbx.sandboxId), 'Sandbox.create returns an airlock sandbox id', sbx.sandboxId)

const info = await sbx.getInfo()
check(info.sandboxId === sbx.sandboxId && info.metadata.suite === marker && info.state === 'running',
  'getInfo: id, metadata, state', info)

const page = await Sandbox.list({ query: { metadata: { suite: marker } } }).nextItems()
check(page.length === 1 && page[0].sandboxId === sbx.sandboxId, 'Sandbox.list with a metadata filter finds it', page)
const none = await Sandbox.list({ query: { metadata: { suite: marker + '-not' } } }).nextItems()
check(none.length === 0, 'a metadata filter that matches nothing lists nothing', none)

// ---- commands --------------------------------------------------------------------------------------
const r = await sbx.commands.run('echo "$GREETING from $(pwd)"; echo to-stderr >&2')
check(r.exitCode === 0 && r.stdout === 'hello from /home/user\n' && r.stderr === 'to-stderr\n',
  'commands.run: stdout, stderr, exit 0, the create\'s envs, cwd /home/user', r)

const who = await sbx.commands.run('echo $USER; id -un; id -gn; echo $HOME; cd /home/user && pwd && ls -d /home/user/.')
check(who.stdout === 'user\nuser\nuser\n/home/user\n/home/user\n/home/user/.\n',
  'the sandbox user is "user" (its account too: id -un), its home /home/user', who.stdout)

const err = await rejects(sbx.commands.run('echo partial; exit 7'))
check(err instanceof CommandExitError && err.exitCode === 7 && err.stdout === 'partial\n',
  'a non-zero exit is the SDK\'s CommandExitError with its code and output', err && { code: err.exitCode, out: err.stdout })

const chunks = []
const streamed = await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.2; done', {
  onStdout: (d) => chunks.push(d),
  envs: { EXTRA: 'x' },
  cwd: '/home/user',
})
check(chunks.join('') === 'line1\nline2\nline3\n' && chunks.length >= 2 && streamed.exitCode === 0,
  'onStdout gets the output as it comes', chunks)

// ---- background processes, list, kill, stdin --------------------------------------------------------
const bg = await sbx.commands.run('sleep 300', { background: true })
check(bg.pid > 0, 'a background command has a pid', bg.pid)
let procs = await sbx.commands.list()
check(procs.some((p) => p.pid === bg.pid), 'commands.list shows it', procs)
check(await sbx.commands.kill(bg.pid) === true, 'commands.kill kills it')
const ended = await rejects(bg.wait())
check(ended instanceof CommandExitError, 'its handle ends with an error after the kill', ended && ended.message)
await sleep(200)
procs = await sbx.commands.list()
check(!procs.some((p) => p.pid === bg.pid), 'and it is gone from the list', procs)

const cat = await sbx.commands.run('cat', { background: true, stdin: true })
await sbx.commands.sendStdin(cat.pid, 'through stdin\n')
await sbx.commands.closeStdin(cat.pid)
const catr = await cat.wait()
check(catr.stdout === 'through stdin\n', 'sendStdin and closeStdin reach the process', catr)

// ---- a port of the sandbox through E2B's addressing ---------------------------------------------------
// A server in the sandbox that records every connection it accepts (so a refused request can be
// shown never to have reached it) and answers with what it saw.
await sbx.files.write('/home/user/srv.py', `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def setup(self):
        open('/home/user/conns.log', 'a').write('conn\\n')
        super().setup()
    def answer(self, extra):
        seen = [h for h in ('X-API-Key', 'X-Access-Token', 'E2B-Traffic-Access-Token', 'Authorization') if h in self.headers]
        body = ('path=%s host=%s creds=%s%s' % (self.path, self.headers.get('Host'), ','.join(seen) or 'none', extra)).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.headers.get('Upgrade', '').lower() == 'websocket':
            self.send_response(101)
            self.send_header('Upgrade', 'websocket')
            self.send_header('Connection', 'Upgrade')
            self.end_headers()
            self.wfile.flush()
            self.connection.sendall(b'echo:' + self.connection.recv(100))
            return
        self.answer('')
    def do_POST(self):
        self.answer(' body=' + self.rfile.read(int(self.headers['Content-Length'])).decode())
    def log_message(self, *a):
        pass
http.server.HTTPServer(('127.0.0.1', 8123), H).serve_forever()
`)
const server = await sbx.commands.run('python3 /home/user/srv.py', { background: true })
const sandboxUrl = process.env.E2B_SANDBOX_URL
const key = process.env.E2B_API_KEY
const byHeaders = (port, headers, init = {}) =>
  fetch(`${sandboxUrl}/hello?x=1`, { ...init, headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(port), ...headers } })
let first
for (let i = 0; i < 100; i++) {
  first = await byHeaders(8123, { 'X-API-Key': key })
  if (first.status === 200) break
  await sleep(100)
}
const firstBody = await first.text()
check(first.status === 200 && firstBody === `path=/hello?x=1 host=${new URL(sandboxUrl).host} creds=none`,
  "the owner's API key reaches the sandbox's own port through E2b-Sandbox-Port (no credential passed on)", firstBody)
const conns = async () => (await sbx.files.read('/home/user/conns.log')).split('\n').filter(Boolean).length
const before = await conns()
const posted = await byHeaders(8123, { Authorization: `Bearer ${key}`, 'Content-Type': 'text/plain' }, { method: 'POST', body: 'posted-' + marker })
check(posted.status === 200 && (await posted.text()).endsWith(`creds=none body=posted-${marker}`), 'a POST with a bearer key, its body passed on')

// getHost(port): "PORT-ID.DOMAIN" with the domain the server is configured for; sent as the Host.
const host = sbx.getHost(8123)
check(host === `8123-${sbx.sandboxId}.e2b.test`, 'getHost names the port under the sandbox domain', host)
const http = await import('node:http')
const byHost = (h, headers, path = '/by-host', method = 'GET', body = null) => new Promise((resolve, reject) => {
  const u = new URL(sandboxUrl)
  const req = http.request({ host: u.hostname, port: u.port, path, method, headers: { Host: h, ...headers } }, (res) => {
    let data = ''
    res.on('data', (d) => { data += d })
    res.on('end', () => resolve({ status: res.statusCode, body: data }))
  })
  req.on('error', reject)
  req.end(body)
})
const viaHost = await byHost(host, { 'X-API-Key': key })
check(viaHost.status === 200 && viaHost.body === `path=/by-host host=${host} creds=none`, 'the Host getHost gave, with the API key', viaHost)
const viaTraffic = await byHost(host, { 'E2B-Traffic-Access-Token': sbx.trafficAccessToken })
check(viaTraffic.status === 200 && viaTraffic.body.endsWith('creds=none'), "the sandbox's traffic token alone", viaTraffic)
const reached = await conns()
check(reached === before + 3, 'each of those reached the server once', [before, reached])

// Refused: nothing of these reaches the server.
const anon = await byHeaders(8123, {})
check(anon.status === 401, 'no credential: 401', anon.status)
const anonHost = await byHost(host, {})
check(anonHost.status === 401, 'the Host alone: 401', anonHost.status)
const forged = await byHost(host, { 'E2B-Traffic-Access-Token': '0'.repeat(64) })
check(forged.status === 401, 'a forged traffic token: 401', forged.status)
if (other) {
  const theirs = await byHeaders(8123, { 'X-API-Key': other })
  check(theirs.status === 404, "another principal's key: 404, as an unknown sandbox", theirs.status)
  const theirsHost = await byHost(host, { 'X-API-Key': other })
  check(theirsHost.status === 404, "another principal's key by Host: 404", theirsHost.status)
}
check(await conns() === reached, 'no refused request reached the sandbox\'s server', await conns())
// A WebSocket's upgrade, then bytes both ways (the same splice as the JSON API's ports).
const net = await import('node:net')
const upgraded = await new Promise((resolve, reject) => {
  const u = new URL(sandboxUrl)
  const sock = net.connect(Number(u.port), u.hostname)
  let seen = ''
  sock.on('data', (d) => {
    seen += d.toString('latin1')
    if (seen.startsWith('HTTP/1.1 101') && seen.includes('\r\n\r\n') && !sock.pinged) {
      sock.pinged = true
      sock.write('ping-' + marker)
    }
    if (seen.includes('echo:ping-' + marker)) {
      sock.destroy()
      resolve(seen)
    }
  })
  sock.on('error', reject)
  sock.on('close', () => resolve(seen))
  sock.write(`GET /ws HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
    `E2b-Sandbox-Id: ${sbx.sandboxId}\r\nE2b-Sandbox-Port: 8123\r\nX-API-Key: ${key}\r\n\r\n`)
})
check(upgraded.startsWith('HTTP/1.1 101') && upgraded.includes('echo:ping-' + marker),
  'a WebSocket upgrade through E2b-Sandbox-Port, then bytes both ways', upgraded)
const closed = await byHeaders(8124, { 'X-API-Key': key })
check(closed.status === 502, 'a port nothing listens on: 502', closed.status)
await sbx.commands.kill(server.pid)

// ---- signed file URLs (downloadUrl, uploadUrl: the sandbox's access token signs them) -----------------
// The SDK builds them on its sandbox URL; the sandbox is named by E2B's Host there (E2B_DOMAIN's
// addressing), so they are sent with the envd port's Host, as a wildcard DNS name would.
const envdHost = sbx.getHost(49983)
const pathOf = (u) => { const x = new URL(u); return x.pathname + x.search }
await sbx.files.write('/home/user/signed.txt', 'signed-' + marker)
const dl = await sbx.downloadUrl('/home/user/signed.txt')
check(new URL(dl).searchParams.get('signature').startsWith('v1_'), 'downloadUrl carries a signature', dl)
const got = await byHost(envdHost, {}, pathOf(dl))
check(got.status === 200 && got.body === 'signed-' + marker, 'a signed download URL alone reads the file', got)
const other2 = new URL(dl)
other2.searchParams.set('path', '/home/user/srv.py')
const swapped = await byHost(envdHost, {}, pathOf(other2.toString()))
check(swapped.status === 401, "another path under the same signature: 401", swapped.status)
const asWrite = await byHost(envdHost, { 'Content-Type': 'application/octet-stream' }, pathOf(dl), 'POST', 'overwritten')
check(asWrite.status === 401 && (await sbx.files.read('/home/user/signed.txt')) === 'signed-' + marker,
  'a read signature does not write (401, the file unchanged)', asWrite.status)
const expired = await byHost(envdHost, {}, pathOf(await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: -60 })))
check(expired.status === 401 && expired.body.includes('expired'), 'an expired signature: 401', expired)
const fresh = await byHost(envdHost, {}, pathOf(await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: 600 })))
check(fresh.status === 200 && fresh.body === 'signed-' + marker, 'one that expires later reads', fresh.status)
const up = await sbx.uploadUrl('/home/user/uploaded.txt')
const form = '--b0undary\r\nContent-Disposition: form-data; name="file"; filename="uploaded.txt"\r\n' +
  'Content-Type: application/octet-stream\r\n\r\nuploaded-' + marker + '\r\n--b0undary--\r\n'
const put = await byHost(envdHost, { 'Content-Type': 'multipart/form-data; boundary=b0undary' }, pathOf(up), 'POST', form)
check(put.status === 200 && (await sbx.files.read('/home/user/uploaded.txt')) === 'uploaded-' + marker,
  'a signed upload URL alone writes the file', put)
const unsignedUp = new URL(up)
unsignedUp.searchParams.delete('signature')
const refusedUp = await byHost(envdHost, { 'Content-Type': 'application/octet-stream' }, pathOf(unsignedUp.toString()), 'POST', 'x')
check(refusedUp.status === 401, 'without its signature: 401', refusedUp.status)

// ---- a terminal ----------------------------------------------------------------------------------------
let screen = ''
const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += new TextDecoder().decode(d) } })
await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
await sbx.pty.sendInput(term.pid, new TextEncoder().encode('echo pty-$((6*7)); stty size; exit\n'))
const termEnd = await term.wait()
check(screen.includes('pty-42') && screen.includes('30 100') && termEnd.exitCode === 0,
  'pty.create, sendInput and resize: a terminal session', screen)

// ---- files -----------------------------------------------------------------------------------------
await sbx.files.write('/home/user/notes/a.txt', 'text A')
check(await sbx.files.read('/home/user/notes/a.txt') === 'text A', 'files.write / read text (parents made)')
const bytes = new Uint8Array([0, 1, 2, 254, 255])
await sbx.files.write('bin.dat', bytes)
const back = await sbx.files.read('bin.dat', { format: 'bytes' })
check(Buffer.from(back).equals(Buffer.from(bytes)), 'bytes round-trip (a relative path is under /home/user)', [...back])
const seen = await sbx.commands.run('cat /home/user/notes/a.txt')
check(seen.stdout === 'text A', 'a command sees the file at /home/user', seen.stdout)
check(await sbx.files.exists('/home/user/notes/a.txt') && !(await sbx.files.exists('/home/user/nope')), 'files.exists')
const listed = await sbx.files.list('/home/user/notes')
check(listed.length === 1 && listed[0].name === 'a.txt' && listed[0].type === 'file' &&
  listed[0].path === '/home/user/notes/a.txt', 'files.list', listed)
check(await sbx.files.makeDir('/home/user/d1') === true, 'files.makeDir makes a directory')
check(await sbx.files.makeDir('/home/user/d1') === false, 'files.makeDir of an existing one is false')
const moved = await sbx.files.rename('/home/user/notes/a.txt', '/home/user/d1/b.txt')
check(moved.path === '/home/user/d1/b.txt' && moved.type === 'file', 'files.rename', moved)
const deep = await sbx.files.list('/home/user', { depth: 2 })
check(deep.some((e) => e.path === '/home/user/d1/b.txt'), 'files.list with depth 2 goes into directories', deep.map((e) => e.path))
const inf = await sbx.files.getInfo('/home/user/d1/b.txt')
check(inf.size === 6 && inf.type === 'file', 'files.getInfo', inf)
await sbx.files.remove('/home/user/d1')
check(!(await sbx.files.exists('/home/user/d1/b.txt')), 'files.remove removes a directory with its files')
const nf = await rejects(sbx.files.read('/home/user/missing.txt'))
check(nf instanceof NotFoundError, 'reading a missing file is NotFoundError', nf && nf.constructor.name)

// ---- watch -----------------------------------------------------------------------------------------
await sbx.files.makeDir('/home/user/w')
const events = []
const handle = await sbx.files.watchDir('/home/user/w', (e) => events.push(e))
await sbx.files.write('/home/user/w/new.txt', 'x')
for (let i = 0; i < 50 && !events.some((e) => e.name === 'new.txt'); i++) await sleep(100)
await handle.stop()
check(events.some((e) => e.name === 'new.txt' && (e.type === 'create' || e.type === 'write')), 'watchDir reports a new file', events)

// ---- the polling watchers, through the SDK's own Connect client (sbx.files.rpc) -------------------------
await sbx.files.makeDir('/home/user/pw')
const { watcherId } = await sbx.files.rpc.createWatcher({ path: '/home/user/pw', recursive: false })
check(/^w[0-9a-f]{32}$/.test(watcherId), 'CreateWatcher answers a watcher id', watcherId)
const pollUntil = async (name) => {
  const got = []
  for (let i = 0; i < 50 && !got.some((e) => e.name === name); i++) {
    got.push(...(await sbx.files.rpc.getWatcherEvents({ watcherId })).events)
    if (!got.some((e) => e.name === name)) await sleep(100)
  }
  return got
}
await sbx.files.write('/home/user/pw/polled.txt', 'x')
const polled = await pollUntil('polled.txt')
// EventType: CREATE 1, WRITE 2 (the SDK's enum numbers)
check(polled.some((e) => e.name === 'polled.txt' && (e.type === 1 || e.type === 2)), 'GetWatcherEvents reports a new file', polled)
await sbx.files.write('/home/user/pw/second.txt', 'y')
const afterward = await pollUntil('second.txt')
check(afterward.some((e) => e.name === 'second.txt') && !afterward.some((e) => e.name === 'polled.txt' && e.type === 1),
  'the next polls report what came since, not the events already taken', afterward)
const foreignPoll = await fetch(`${process.env.E2B_SANDBOX_URL}/filesystem.Filesystem/GetWatcherEvents`, {
  method: 'POST',
  headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'Content-Type': 'application/json', 'X-API-Key': other || 'e2b_none' },
  body: JSON.stringify({ watcherId }),
})
const foreignBody = await foreignPoll.text()
check(foreignPoll.status === (other ? 404 : 401) && (!other || foreignBody.includes('not_found')),
  "another principal's key does not find the watcher", [foreignPoll.status, foreignBody])
await sbx.files.rpc.removeWatcher({ watcherId })
const removed = await rejects(sbx.files.rpc.getWatcherEvents({ watcherId }))
check(removed && removed.code === 5, 'RemoveWatcher: the id is gone (not_found)', removed && [removed.code, removed.message])
await sbx.files.makeDir('/home/user/pw2')
const { watcherId: w2 } = await sbx.files.rpc.createWatcher({ path: '/home/user/pw2' })
await sbx.files.remove('/home/user/pw2')
let watchEnd = null
for (let i = 0; i < 100 && !watchEnd; i++) {
  watchEnd = await rejects(sbx.files.rpc.getWatcherEvents({ watcherId: w2 }))
  if (!watchEnd) await sleep(100)
}
check(watchEnd && watchEnd.code === 5, 'a watch whose directory was removed ends: its events, then its id is gone', watchEnd && watchEnd.code)
// One left to the server's end (and the sandbox's kill), which ends it.
await sbx.files.rpc.createWatcher({ path: '/home/user' })
const noDir = await rejects(sbx.files.rpc.createWatcher({ path: '/home/user/no-such-dir' }))
check(noDir && noDir.code === 5, 'CreateWatcher of a missing directory: not_found', noDir && noDir.code)

// ---- StreamInput: a client stream of input (one request, several envelopes) ------------------------
const envelopes = (...msgs) => Buffer.concat(msgs.map((m) => {
  const j = Buffer.from(JSON.stringify(m))
  const h = Buffer.alloc(5)
  h.writeUInt32BE(j.length, 1)
  return Buffer.concat([h, j])
}))
const b64 = (t) => Buffer.from(t).toString('base64')
const streamInput = (body) => fetch(`${process.env.E2B_SANDBOX_URL}/process.Process/StreamInput`, {
  method: 'POST',
  headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'Content-Type': 'application/connect+json', 'X-Access-Token': sbx.envdAccessToken },
  body,
})
const sink = await sbx.commands.run('cat', { background: true, stdin: true })
const early = await streamInput(envelopes({ data: { input: { stdin: b64('too early\n') } } }, { start: { process: { pid: sink.pid } } }))
const badBody = Buffer.from(await early.arrayBuffer())
check(early.status === 200 && badBody[0] === 2 && badBody.includes('invalid_argument'),
  'StreamInput: data before start ends the stream with invalid_argument', badBody.toString('latin1'))
const good = await streamInput(envelopes({ start: { process: { pid: sink.pid } } }, { data: { input: { stdin: b64('one,') } } },
  { keepalive: {} }, { data: { input: { stdin: b64('two\n') } } }))
const goodBody = Buffer.from(await good.arrayBuffer())
check(good.status === 200 && goodBody.equals(Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7d, 2, 0, 0, 0, 2, 0x7b, 0x7d])),
  'StreamInput answers the empty message and the end of the stream', goodBody.toString('latin1'))
await sbx.commands.closeStdin(sink.pid)
const sunk = await sink.wait()
check(sunk.stdout === 'one,two\n', 'the stream\'s input reached the process in order (and nothing of the refused one)', sunk.stdout)

// ---- timeout, another principal, kill ------------------------------------------------------------
await sbx.setTimeout(600_000)
const later = await sbx.getInfo()
check(later.endAt.getTime() - Date.now() > 500_000, 'setTimeout moves the end', later.endAt)

if (other) {
  const theirs = await Sandbox.list({ apiKey: other }).nextItems()
  check(!theirs.some((s) => s.sandboxId === sbx.sandboxId), 'another principal does not list this sandbox')
  const e2 = await rejects(Sandbox.getInfo(sbx.sandboxId, { apiKey: other }))
  check(e2 instanceof SandboxNotFoundError, 'nor can it get its info', e2 && e2.constructor.name)
  check(await Sandbox.kill(sbx.sandboxId, { apiKey: other }) === false, 'nor kill it')
  const foreign = await Sandbox.connect(sbx.sandboxId, { apiKey: other }).catch((e) => e)
  check(foreign instanceof Error, 'nor connect to it', foreign && foreign.constructor.name)
}
const bad = await rejects(Sandbox.list({ apiKey: 'e2b_' + '0'.repeat(40) }).nextItems())
check(bad instanceof AuthenticationError, 'an unknown API key is refused', bad && bad.constructor.name)

const again = await Sandbox.connect(sbx.sandboxId)
const r2 = await again.commands.run('echo connected')
check(r2.stdout === 'connected\n', 'Sandbox.connect to a running sandbox works')

// ---- pause, connect (which resumes), fork ---------------------------------------------------------
await sbx.commands.run('echo before >/home/user/p.txt')
check(await sbx.pause() === true, 'pause')
const paused = await sbx.getInfo()
check(paused.state === 'paused', 'a paused sandbox says so in its info', paused.state)
const listedPaused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
check(listedPaused.some((x) => x.sandboxId === sbx.sandboxId), 'it is listed as paused')
const resumed = await Sandbox.connect(sbx.sandboxId)
check((await resumed.getInfo()).state === 'running', 'connect resumes it')
const r3 = await resumed.commands.run('cat /home/user/p.txt')
check(r3.stdout === 'before\n', 'its files are there after the resume', r3.stdout)
const forks = await sbx.fork({ count: 2 })
check(forks.length === 2 && forks.every((f) => f instanceof Sandbox) && forks[0].sandboxId !== forks[1].sandboxId,
  'fork makes two sandboxes', forks.map((f) => (f instanceof Error ? f.message : f.sandboxId)))
const fr = await forks[0].commands.run('cat /home/user/p.txt; echo kid >/home/user/p.txt')
check(fr.stdout === 'before\n', 'a fork has the files', fr.stdout)
const pr = await sbx.commands.run('cat /home/user/p.txt')
check(pr.stdout === 'before\n', "the parent does not see the fork's write", pr.stdout)
for (const f of forks) await f.kill()

check(await sbx.kill() === true, 'kill')
const gone = await rejects(Sandbox.getInfo(sbx.sandboxId))
check(gone instanceof SandboxNotFoundError, 'a killed sandbox is gone', gone && gone.constructor.name)
console.log('ok: all')
