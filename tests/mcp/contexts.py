"""contexts.py — interpreter contexts over the JSON API (and a cancel over MCP stdio), judged from outside: state across
cells, values, errors, timeouts that keep (or honestly lose) the state and leave no process, OOM,
restart, figures as PNG, DataFrames as tables, named contexts, and two sandboxes that share nothing.
Usage: contexts.py WORKDIR CONFDIR -- AIRLOCK_COMMAND... (CONFDIR: writable by its owner only)"""
import base64
import json
import os
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Client  # noqa: E402

work = sys.argv[1]
MARK = "alc%d%d" % (os.getpid(), int(time.time()))  # made here: no process above us carries it
mark = MARK
cmd = sys.argv[sys.argv.index("--") + 1:]
failures = []
config = os.path.join(sys.argv[2], "contexts.yaml")
with open(config, "w") as f:
    f.write("version: 1\nrules:\n- name: all\n  tools: [\"*\"]\n  risk: LOW\n  require_approval: false\n"
            "server:\n  cell_image_limit: 64k\n")
os.chmod(config, 0o644)


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, file=sys.stderr)
    if not cond:
        failures.append(what)


def marker_pids():
    """Host processes whose command line carries the marker (the cells' children)."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if mark.encode() in f.read():
                        found.append(int(d))
            except OSError:
                pass
    return found


def png_size(data):
    """(width, height) of a PNG, or None: the signature and the IHDR chunk."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


class Mcp:
    name = "mcp-stdio"

    def __init__(self):
        self.c = Client(cmd + ["mcp", "--config", config, "--audit", os.path.join(work, "mcp.jsonl")])
        self.c.initialize()

    def create(self, limits=None):
        r = self.c.call("code_create_sandbox", {"limits": limits} if limits else {})
        return r["result"]["structuredContent"]["sandbox_id"]

    def execute(self, sid, code, **kw):
        args = {"language": "python", "code": code, "sandbox_id": sid, **kw}
        r = self.c.call("code_execute", args, timeout=120)["result"]
        images = [base64.b64decode(x["data"]) for x in r["content"] if x["type"] == "image"]
        return r.get("structuredContent") or {"error": json.dumps(r)}, images

    def context(self, sid, action, **kw):
        r = self.c.call("code_context", {"sandbox_id": sid, "action": action, **kw})["result"]
        return r.get("structuredContent") or {"error": json.dumps(r)}

    def close(self):
        self.c.close()


class Api:
    name = "json-api"

    def __init__(self):
        port_file, token_file = os.path.join(work, "serve.port"), os.path.join(work, "serve.token")
        self.err = open(os.path.join(work, "serve.err"), "w")
        self.p = subprocess.Popen(cmd + ["serve", "--config", config, "--audit", os.path.join(work, "serve.jsonl"),
                                         "--http", "127.0.0.1:0", "--socket", "none", "--token-file", token_file,
                                         "--port-file", port_file], stderr=self.err)
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        self.base = "http://127.0.0.1:%s" % open(port_file).read().strip()
        self.auth = {"Authorization": "Bearer " + open(token_file).read().split()[-1]}

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data, {"Content-Type": "application/json", **self.auth},
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def create(self, limits=None):
        return json.loads(self.request("POST", "/v1/sandboxes", {"limits": limits} if limits else {})[1])["sandbox_id"]

    def execute(self, sid, code, **kw):
        status, body = self.request("POST", "/v1/sandboxes/%s/exec" % sid, {"language": "python", "code": code, **kw})
        lines = [json.loads(l) for l in body.splitlines() if l.strip()]
        res = [l["result"] for l in lines if "result" in l]
        if not res:
            return {"error": "%d %s" % (status, body)}, []
        images = [base64.b64decode(x["data"]) for x in res[-1].get("cell", {}).get("images", [])]
        return res[-1], images

    def context(self, sid, action, context_id=None, **kw):
        base = "/v1/sandboxes/%s/contexts" % sid
        if action == "list":
            status, body = self.request("GET", base)
        elif action == "create":
            status, body = self.request("POST", base, {"context_id": context_id, **kw} if context_id else kw)
        elif action == "restart":
            status, body = self.request("POST", "%s/%s/restart" % (base, context_id))
        else:
            status, body = self.request("DELETE", "%s/%s" % (base, context_id))
        return json.loads(body) if status == 200 else {"error": "%d %s" % (status, body)}

    def close(self):
        self.p.terminate()
        check(self.p.wait(30) == 0, "json-api: airlock serve exits 0 on SIGTERM")


def cell(r):
    return r.get("cell") or {}


def value(r):
    return (cell(r).get("value") or {}).get("text")


def scenario(t):
    n = t.name
    a, b = t.create({"memory_mb": 256}), t.create()
    r, _ = t.execute(a, "x = 41\nimport os\nprint('set')")
    check(r.get("stdout") == "set\n" and cell(r).get("state") == "kept", "%s: a cell streams stdout: %s" % (n, r))
    r, _ = t.execute(a, "x + 1")
    check(value(r) == "42", "%s: state persists, the last expression comes back (%s)" % (n, value(r)))
    r, _ = t.execute(a, "def f():\n    return 1/0\nf()")
    err = cell(r).get("error") or {}
    check(err.get("ename") == "ZeroDivisionError" and "<cell" in err.get("traceback", "") and r.get("exit_code") == 1,
          "%s: an error comes back with its traceback (%s)" % (n, err))
    r, _ = t.execute(a, "print(x)", fresh=True)
    check("NameError" in r.get("stderr", "") and "cell" not in r, "%s: a fresh exec sees no context state" % n)
    # Two sandboxes share nothing: no variable, no process.
    r, _ = t.execute(b, "x")
    check(cell(r).get("error", {}).get("ename") == "NameError", "%s: another sandbox's context has no x" % n)
    r, _ = t.execute(b, "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())")
    check(value(r) in ("[1, 2]", "[1, 3]"), "%s: a context sees only its own init and itself (%s)" % (n, value(r)))
    # A timed-out cell is interrupted, keeps the state, and leaves no process behind.
    code = ("import subprocess, os, time\n"
            "p = subprocess.Popen(['sh', '-c', 'sleep 300; : %s'])\n"
            "os.system('(setsid sh -c \"sleep 301; : %s\" &)')\n"
            "time.sleep(300)" % (mark, mark))
    t0 = time.time()
    r, _ = t.execute(a, code, timeout=3)
    took = time.time() - t0
    c = cell(r)
    check(r.get("status") == "timeout" and c.get("state") == "kept" and c.get("interrupted") is True,
          "%s: a timed-out cell is interrupted and the state kept (%s, %s)" % (n, r.get("status"), c))
    check(took < 15, "%s: the timeout answered in %.1f s" % (n, took))
    check(marker_pids() == [], "%s: no process of the timed-out cell is left (%s)" % (n, marker_pids()))
    r, _ = t.execute(a, "x")
    check(value(r) == "41", "%s: the state survived the interrupt (%s)" % (n, value(r)))
    # A cell that swallows the interrupt: past the grace period its kernel is killed, the state honestly lost.
    r, _ = t.execute(a, "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n"
                        "        pass", timeout=1)
    check(r.get("status") == "timeout" and cell(r).get("state") == "lost",
          "%s: a cell that ignores the interrupt loses its state, and says so (%s)" % (n, cell(r)))
    r, _ = t.execute(a, "x")
    check(cell(r).get("error", {}).get("ename") == "NameError" and cell(r).get("restarted") is True,
          "%s: the next cell runs in a clean, restarted kernel (%s)" % (n, cell(r)))
    # Restart clears the state.
    t.execute(a, "z = 1")
    r = t.context(a, "restart", context_id="python")
    check(r.get("running") is True, "%s: restart answers (%s)" % (n, r))
    r, _ = t.execute(a, "z")
    check(cell(r).get("error", {}).get("ename") == "NameError", "%s: restart clears the state" % n)
    # OOM: reported as oom, and the context starts clean.
    t.execute(a, "w = 5")
    r, _ = t.execute(a, "big = bytearray(700 * 1024 * 1024)")
    check(r.get("status") == "oom" and r.get("oom_killed") is True and cell(r).get("state") == "lost",
          "%s: an OOM cell is reported as oom (%s %s)" % (n, r.get("status"), cell(r)))
    r, _ = t.execute(a, "'w' in globals(), 6 * 7")
    check(value(r) == "(False, 42)", "%s: after OOM the context runs clean (%s)" % (n, value(r)))
    # Output stays bounded by the output limit (1 MiB by default); the context carries on.
    r, _ = t.execute(a, "print('y' * (3 << 20))\n7")
    check(r.get("truncated", {}).get("stdout") is True and len(r.get("stdout", "")) <= (1 << 20) and
          r.get("output_bytes", {}).get("stdout") == (3 << 20) + 1 and value(r) == "7",
          "%s: a cell's output is capped, counted, and the cell still answers (%d kept)" % (n, len(r.get("stdout", ""))))
    # Rich results: a figure as PNG, a DataFrame as a table, changed files with sizes.
    r, images = t.execute(a, "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\n"
                             "plt.show()\nopen('data.csv', 'w').write('a,b\\n1,2\\n')")
    sizes = [png_size(im) for im in images]
    check(sizes == [(400, 300)], "%s: the figure comes back as one valid 400x300 PNG (%s)" % (n, sizes))
    # A figure over server.cell_image_limit (64k here) is dropped, and the cell says so.
    r, images = t.execute(a, "import numpy as np\nplt.figure(figsize=(8, 6))\nplt.imshow(np.random.rand(300, 400))\n"
                             "plt.show()")
    check(images == [] and cell(r).get("images_dropped") == 1 and cell(r).get("image_limit") == 65536 and
          "server.cell_image_limit" in r.get("stderr", ""),
          "%s: a figure over the image limit is dropped and reported (%s, %r)" % (n, cell(r), r.get("stderr")))
    r, images = t.execute(a, "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\n"
                             "plt.show()\nopen('data.csv', 'w').write('a,b\\n1,2\\n')")
    files = cell(r).get("files", [])
    check({"path": "data.csv", "size": 8} in files, "%s: the changed file is listed with its size (%s)" % (n, files))
    r, _ = t.execute(a, "import pandas as pd\npd.read_csv('data.csv').assign(c=lambda d: d.a + d.b)")
    v = cell(r).get("value") or {}
    check(v.get("type") == "DataFrame" and "a  b  c" in v.get("text", "") and "<table" in (v.get("html") or ""),
          "%s: a DataFrame comes back as a text table and HTML (%s)" % (n, v))
    # Shell contexts: variables, functions and the directory carry over; background jobs do not.
    t.execute(a, "S=7; g() { echo g$1; }; mkdir -p sub && cd sub", language="shell")
    r, _ = t.execute(a, "(sleep 300; : %s) &\necho $S $(g 1) $PWD" % mark, language="shell")
    check(r.get("stdout") == "7 g1 /workspace/sub\n" and cell(r).get("context_id") == "shell",
          "%s: a shell context keeps variables, functions and its directory (%r)" % (n, r.get("stdout")))
    check(marker_pids() == [], "%s: a shell cell's background job ends with the cell (%s)" % (n, marker_pids()))
    # The cell is not the shell's argv (ps shows it to every process) nor in its processes' environment.
    r, _ = t.execute(a, "grep -c cell-text-77 /proc/$$/cmdline; echo \"[${__AL_CELL-}]\"; sh -c 'printenv | grep -c __AL_CELL'",
                     language="shell")
    check(r.get("stdout") == "0\n[]\n0\n", "%s: a shell cell's code is in no argv nor environment (%r)" % (n, r.get("stdout")))
    r, _ = t.execute(a, "echo \"[$S]\"", language="shell", fresh=True)
    check(r.get("stdout") == "[]\n", "%s: a fresh shell exec sees no context state" % n)
    # JavaScript contexts: state, values, a timeout that keeps the state, children gone.
    t.execute(a, "var jx = 20; const cp = require('child_process')", language="javascript")
    r, _ = t.execute(a, "cp.spawn('sh', ['-c', 'sleep 300; : %s'], {detached: true}); [jx + 1, typeof x]" % mark,
                     language="javascript")
    check(value(r) == "[ 21, 'undefined' ]", "%s: a JavaScript context keeps its state, apart (%s)" % (n, value(r)))
    check(marker_pids() == [], "%s: a JavaScript cell's child ends with the cell (%s)" % (n, marker_pids()))
    r, _ = t.execute(a, "while (true) {}", language="javascript", timeout=1)
    check(r.get("status") == "timeout" and cell(r).get("state") == "kept",
          "%s: a timed-out JavaScript cell keeps the state (%s)" % (n, cell(r)))
    r, _ = t.execute(a, "jx", language="javascript")
    check(value(r) == "20", "%s: ... and it is still there (%s)" % (n, value(r)))
    # Top-level await: the settled value is the cell's, declarations persist, a Promise value is awaited.
    r, _ = t.execute(a, "await new Promise(r => setTimeout(r, 10)); 42", language="javascript")
    check(value(r) == "42", "%s: a JavaScript cell awaits at top level (%s)" % (n, cell(r)))
    t.execute(a, "const aw = await Promise.resolve(5)", language="javascript")
    r, _ = t.execute(a, "[aw + 1, Promise.resolve(7)][0] + (await Promise.resolve(0))", language="javascript")
    check(value(r) == "6", "%s: an awaited declaration persists (%s)" % (n, value(r)))
    r, _ = t.execute(a, "Promise.resolve(7)", language="javascript")
    check(value(r) == "7", "%s: a Promise value is awaited (%s)" % (n, value(r)))
    # What a cell leaves pending: its timers cancelled and counted; a late callback's output dropped, counted.
    r, _ = t.execute(a, "setInterval(() => console.log('tick'), 5); require('timers').setTimeout(() => "
                        "console.log('late'), 100); 1", language="javascript")
    check(cell(r).get("timers_cancelled") == 1, "%s: a cell's pending timer is cancelled at its end (%s)" % (n, cell(r)))
    r, _ = t.execute(a, "await new Promise(r => setTimeout(r, 400)); 'quiet'", language="javascript")
    check(r.get("stdout") == "" and value(r) == "'quiet'" and cell(r).get("late_output_bytes") == 5,
          "%s: an earlier cell's late output does not reach this one, and is counted (%r, %s)" % (n, r.get("stdout"), cell(r)))
    r, _ = t.execute(a, "await new Promise(() => {})", language="javascript", timeout=2)
    check(r.get("status") == "timeout" and cell(r).get("state") == "kept" and
          (cell(r).get("error") or {}).get("ename") == "TimeoutError",
          "%s: an await past the time limit times out, the state kept (%s)" % (n, cell(r)))
    r, _ = t.execute(a, "jx + aw", language="javascript")
    check(value(r) == "25", "%s: ... and the state is there (%s)" % (n, value(r)))
    r, _ = t.execute(a, "puts 1", language="ruby", context_id="second")
    check("context_id needs" in r.get("error", ""), "%s: a context for a language without one is refused (%s)" % (n, r))
    # Named contexts: created, separate, listed, deleted.
    r = t.context(a, "create", context_id="second", language="python")
    check(r.get("context_id") == "second", "%s: a named context is created (%s)" % (n, r))
    t.execute(a, "q = 5", context_id="second")
    r, _ = t.execute(a, "q", context_id="second")
    check(value(r) == "5", "%s: the named context keeps its own state" % n)
    r, _ = t.execute(a, "'q' in globals()")
    check(value(r) == "False", "%s: the default context does not see it" % n)
    names = sorted(c["context_id"] for c in t.context(a, "list").get("contexts", []))
    check(names == ["javascript", "python", "second", "shell"], "%s: the contexts are listed (%s)" % (n, names))
    made = [t.context(b, "create", context_id="c%d" % i, language="shell").get("context_id") for i in range(15)]
    r = t.context(b, "create", context_id="one-too-many", language="shell")
    check(None not in made and "limit reached" in r.get("error", ""),
          "%s: 16 contexts per sandbox, then a clear refusal (%s)" % (n, r))
    r = t.context(a, "delete", context_id="second")
    names = sorted(c["context_id"] for c in t.context(a, "list").get("contexts", []))
    check(names == ["javascript", "python", "shell"], "%s: a deleted context is gone (%s)" % (n, names))


def cancel_scenario(t):
    """MCP's notifications/cancelled interrupts the cell: its processes end, its context keeps its state."""
    sid = t.create()
    t.execute(sid, "kept = 'yes'")
    c = t.c
    rid = c.start("tools/call", {"name": "code_execute", "arguments": {
        "sandbox_id": sid, "language": "python",
        "code": "import subprocess\nsubprocess.run(['sh', '-c', 'sleep 60; : %s'])" % mark}})
    end = time.time() + 20
    while not marker_pids() and time.time() < end:
        time.sleep(0.05)
    check(marker_pids() != [], "mcp-stdio: the cell to cancel runs")
    c.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    end = time.time() + 10
    while marker_pids() and time.time() < end:
        time.sleep(0.05)
    check(marker_pids() == [], "mcp-stdio: a cancelled cell's processes are gone")
    r, _ = t.execute(sid, "kept")
    check(value(r) == "'yes'", "mcp-stdio: the context survives the cancel (%s)" % cell(r))


# The whole scenario runs on the JSON API; over MCP, the official SDK's client checks the issue's
# bullets (tests/mcp/sdk/contexts.mjs, from contexts.sh), and this client only what the SDK run
# does not: a cancel that interrupts a cell.
for T in (Api, Mcp):
    t = T()
    try:
        if T is Mcp:
            cancel_scenario(t)
        else:
            scenario(t)
    finally:
        t.close()
check(marker_pids() == [], "nothing of the cells is left once the servers ended")
if failures:
    print("%d failure(s)" % len(failures), file=sys.stderr)
    sys.exit(1)
