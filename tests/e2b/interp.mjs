// interp.mjs — the official E2B code interpreter SDK (npm "@e2b/code-interpreter", unchanged) against
// airlock serve's E2B front end: runCode with state, values, errors, logs, a matplotlib PNG, a
// DataFrame, contexts (python, javascript, bash), restart and removal. Configured by E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY only. Prints "ok: ..." per check; the first that fails throws.
import { Sandbox } from '@e2b/code-interpreter'

function check(cond, what, detail) {
  if (!cond) throw new Error(`FAILED: ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`)
  console.log(`ok: ${what}`)
}

const sbx = await Sandbox.create({ timeoutMs: 300_000 })
check(/^sb-/.test(sbx.sandboxId), 'Sandbox.create (template code-interpreter-v1 is the default environment)')

await sbx.runCode('x = 41')
const v = await sbx.runCode('x + 1')
check(v.text === '42', 'runCode keeps state between cells and returns the value', v.toJSON())

const logs = []
const l = await sbx.runCode('import sys\nprint("to out")\nprint("to err", file=sys.stderr)', {
  onStdout: (m) => logs.push(m.line),
})
check(l.logs.stdout.join('') === 'to out\n' && l.logs.stderr.join('') === 'to err\n' && logs.join('') === 'to out\n',
  'logs: stdout and stderr, streamed to onStdout', l.logs)

const e = await sbx.runCode('1 / 0')
check(e.error && e.error.name === 'ZeroDivisionError' && /division/.test(e.error.value) && e.error.traceback.length > 0,
  'an exception is the execution\'s error: name, value, traceback', e.error)

const fig = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()')
const png = fig.results.find((r) => r.png)
check(png && Buffer.from(png.png, 'base64').subarray(1, 4).toString() === 'PNG', 'a matplotlib figure is a PNG result',
  fig.results.map((r) => r.formats()))

const df = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": [3, 4]})')
check(df.results.some((r) => r.isMainResult && (r.html || '').includes('<table') && (r.text || '').includes('a')),
  'a DataFrame is a result with its HTML table and text', df.results.map((r) => r.formats()))

const js = await sbx.createCodeContext({ language: 'javascript' })
check(js.id && js.language === 'javascript', 'createCodeContext (javascript)', js)
await sbx.runCode('let n = 20', { context: js })
const jn = await sbx.runCode('n * 2 + 2', { context: js })
check(jn.text === '42', 'a javascript context keeps its state', jn.toJSON())

const sh = await sbx.createCodeContext({ language: 'bash' })
const shr = await sbx.runCode('echo "in $((6 * 7))"', { context: sh })
check(shr.logs.stdout.join('') === 'in 42\n', 'a bash context runs shell cells', shr.logs)

const listed = await sbx.listCodeContexts()
check(listed.some((c) => c.id === js.id) && listed.some((c) => c.id === sh.id), 'listCodeContexts lists both', listed)

await sbx.restartCodeContext(js)
const after = await sbx.runCode('typeof n', { context: js })
check(after.text === "'undefined'" || after.text === 'undefined', 'restartCodeContext forgets the state', after.toJSON())
await sbx.removeCodeContext(sh)
const left = await sbx.listCodeContexts()
check(!left.some((c) => c.id === sh.id), 'removeCodeContext removes it', left)

const jsDefault = await sbx.runCode('[1, 2, 3].map((i) => i * 2).join(",")', { language: 'javascript' })
check(jsDefault.text === "'2,4,6'" || jsDefault.text === '2,4,6', 'runCode with language javascript', jsDefault.toJSON())

await sbx.kill()
console.log('ok: all')
