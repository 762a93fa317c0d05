// e2b_client.mjs — the load of bench/e2b.sh: the official E2B SDKs (tests/e2b's node_modules,
// pinned by its lock file), unchanged, against airlock serve's E2B front end, beside airlock's own
// JSON API on the same server. For each concurrency C, C clients at once, each ROUNDS times:
//   e2b create → first command: Sandbox.create() then commands.run('echo hi'), timed to its result
//   e2b runCode round trip: in a code interpreter sandbox of its own, runCode('1 + 1') (after one
//                           untimed cell: the kernel's start is the create's)
//   json create → first command: POST /v1/sandboxes then POST .../exec {"language":"shell"}
// Each sandbox is killed, untimed. Prints one JSON object: per mode and C, n, p50, p95, p99, max (ms).
// Environment: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (as the SDK reads them), BENCH_CONC
// ("1,16,64"), BENCH_ROUNDS (samples per client at C=1; fewer at higher C, at least 1).
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const sdkDir = new URL('../tests/e2b/', import.meta.url)
const req = createRequire(new URL('package.json', sdkDir))
const { Sandbox } = await import(pathToFileURL(req.resolve('e2b')).href)
const CI = await import(pathToFileURL(req.resolve('@e2b/code-interpreter')).href)

const api = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const conc = (process.env.BENCH_CONC || '1,16,64').split(',').map(Number)
const rounds1 = Number(process.env.BENCH_ROUNDS || 20)

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.max(0, Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1))]
}
const r3 = (x) => Math.round(x * 10) / 10
function summary(ms) {
  return { n: ms.length, p50: r3(pct(ms, 50)), p95: r3(pct(ms, 95)), p99: r3(pct(ms, 99)), max: r3(Math.max(...ms)) }
}

async function e2bFirstCommand() {
  const t0 = performance.now()
  const sbx = await Sandbox.create({ timeoutMs: 300_000 })
  const r = await sbx.commands.run('echo hi')
  const ms = performance.now() - t0
  if (r.stdout !== 'hi\n') throw new Error(`echo said ${JSON.stringify(r.stdout)}`)
  await sbx.kill()
  return ms
}

async function e2bRunCode() {
  const sbx = await CI.Sandbox.create({ timeoutMs: 300_000 })
  await sbx.runCode('0')
  const t0 = performance.now()
  const e = await sbx.runCode('1 + 1')
  const ms = performance.now() - t0
  if (e.text !== '2') throw new Error(`runCode said ${JSON.stringify(e.toJSON())}`)
  await sbx.kill()
  return ms
}

async function call(method, path, body) {
  const r = await fetch(api + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await r.text()
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status}: ${text.slice(0, 200)}`)
  return text
}

async function jsonFirstCommand() {
  const t0 = performance.now()
  const id = JSON.parse(await call('POST', '/v1/sandboxes', {})).sandbox_id
  const out = await call('POST', `/v1/sandboxes/${id}/exec`, { language: 'shell', code: 'echo hi' })
  const ms = performance.now() - t0
  if (!out.includes('"stdout":"hi\\n"')) throw new Error(`exec said ${out.slice(0, 200)}`)
  await call('DELETE', `/v1/sandboxes/${id}`)
  return ms
}

const modes = { 'e2b create → first command': e2bFirstCommand, 'e2b runCode round trip': e2bRunCode,
  'json create → first command': jsonFirstCommand }
const out = {}
for (const [name, fn] of Object.entries(modes)) {
  out[name] = {}
  for (const c of conc) {
    const rounds = Math.max(1, Math.round(rounds1 / c))
    const ms = []
    await Promise.all(Array.from({ length: c }, async () => {
      for (let i = 0; i < rounds; i++) ms.push(await fn())
    }))
    out[name][c] = summary(ms)
    console.error(`e2b.sh: ${name}, ${c} clients: ${JSON.stringify(out[name][c])}`)
  }
}
console.log(JSON.stringify(out))
