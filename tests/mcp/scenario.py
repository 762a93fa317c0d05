"""scenario.py — airlock mcp end to end over stdio, judged from outside the sandboxes.
Usage: scenario.py WORKDIR AUDIT_LOG -- AIRLOCK_COMMAND..."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Client, LATEST, PREVIOUS  # noqa: E402

work, audit = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
MARK = "alm%d%d" % (os.getpid(), int(time.time()))
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, file=sys.stderr)
    if not cond:
        failures.append(what)


def marker_pids(mark):
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if mark.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def text(r):
    return "".join(c.get("text", "") for c in r["result"].get("content", []))


def sc(r):
    return r["result"].get("structuredContent", {})


c = Client(cmd + ["mcp", "--audit", audit])
# Version negotiation: the previous revision is accepted as such, an unknown one gets the latest.
r = c.initialize(PREVIOUS)
check(r["result"]["protocolVersion"] == PREVIOUS, "initialize: previous revision negotiated")
tools = {t["name"]: t for t in c.request("tools/list")["result"]["tools"]}
for t in ["code_execute", "code_create_sandbox", "code_install_package", "code_write_file", "code_read_file",
          "code_list_files", "code_destroy_sandbox"]:
    check(t in tools and tools[t]["inputSchema"]["type"] == "object", "tools/list has %s with a schema" % t)
c.close()

c = Client(cmd + ["mcp", "--audit", audit])
check(c.initialize("1999-01-01")["result"]["protocolVersion"] == LATEST, "unknown revision: the latest offered")

# A throwaway sandbox, approved by the user through elicitation.
r = c.call("code_execute", {"language": "python", "code": "print(6 * 7)"})
check(not r["result"].get("isError") and sc(r).get("stdout") == "42\n", "code_execute python: 42 (%s)" % json.dumps(r)[:300])
check(len(c.elicitations) == 1, "code execution was put to the user (elicitation)")

# Persistent sandboxes: files persist, processes do not.
r = c.call("code_create_sandbox", {"language": "shell"})
sb = sc(r).get("sandbox_id")
check(bool(sb), "code_create_sandbox: an id (%s)" % json.dumps(r)[:300])
r = c.call("code_write_file", {"sandbox_id": sb, "path": "data/in.txt", "content": "persisted\n"})
check(not r["result"].get("isError"), "code_write_file data/in.txt")
daemon = "setsid sh -c 'exec -a %s-daemon sleep 300' </dev/null >/dev/null 2>&1 & echo started" % MARK
r = c.call("code_execute", {"sandbox_id": sb, "language": "shell",
                            "code": "cat data/in.txt; echo made > made.txt; " + daemon})
check(sc(r).get("stdout") == "persisted\nstarted\n", "exec reads the written file (%s)" % sc(r).get("stdout"))
time.sleep(0.3)
check(marker_pids(MARK + "-daemon") == [], "a setsid daemon does not outlive its exec")
r = c.call("code_read_file", {"sandbox_id": sb, "path": "made.txt"})
check("made" in text(r) or "made" in json.dumps(sc(r)), "a file made by one exec is read back (%s)" % json.dumps(r)[:200])
r = c.call("code_execute", {"sandbox_id": sb, "language": "python",
                            "code": "import os; print(sorted(os.listdir('.')))"})
check("made.txt" in sc(r).get("stdout", "") and "data" in sc(r).get("stdout", ""), "the next exec sees both files")
r = c.call("code_list_files", {"sandbox_id": sb, "path": "data"})
check("in.txt" in json.dumps(r["result"]), "code_list_files data")

# Isolation between sandboxes.
sb2 = sc(c.call("code_create_sandbox", {}))["sandbox_id"]
r = c.call("code_read_file", {"sandbox_id": sb2, "path": "made.txt"})
check(r["result"].get("isError") is True, "another sandbox cannot read the first one's file")
r = c.call("code_execute", {"sandbox_id": sb2, "language": "shell", "code": "ls -A /workspace; ls /proc | grep -c '^[0-9]'"})
check("made.txt" not in sc(r).get("stdout", ""), "another sandbox's workspace is its own")

# Paths escaping the workspace, including a symlink planted by the sandbox.
for bad in ["../../../../etc/passwd", "/etc/passwd", "data/../../etc/passwd"]:
    r = c.call("code_read_file", {"sandbox_id": sb, "path": bad})
    check(r["result"].get("isError") is True and "root:" not in json.dumps(r), "read_file %s refused" % bad)
c.call("code_execute", {"sandbox_id": sb, "language": "shell", "code": "ln -s /etc/passwd link; ln -s / rootlink"})
for bad in ["link", "rootlink/etc/passwd"]:
    r = c.call("code_read_file", {"sandbox_id": sb, "path": bad})
    check(r["result"].get("isError") is True and "root:" not in json.dumps(r), "read_file through planted symlink %s refused" % bad)
outside = os.path.join(work, "escaped.txt")
r = c.call("code_write_file", {"sandbox_id": sb, "path": "rootlink" + outside, "content": "x"})
check(r["result"].get("isError") is True and not os.path.exists(outside), "write_file through a planted symlink refused, nothing written")

# Denied and timed-out approvals: the code never runs (no file appears).
c.answer = "decline"
r = c.call("code_execute", {"sandbox_id": sb, "language": "shell", "code": "echo x > denied.txt"})
check(r["result"].get("isError") is True, "declined: a tool error")
c.answer = "approve"
r = c.call("code_list_files", {"sandbox_id": sb})
check("denied.txt" not in json.dumps(r["result"]), "declined: the code never ran")

# Limits: a timeout kills the exec.
r = c.call("code_execute", {"sandbox_id": sb, "language": "shell", "code": "exec -a %s-slow sleep 30" % MARK, "timeout": 1}, timeout=30)
check(r["result"].get("isError") is True and sc(r).get("status") == "timeout", "timeout 1 s: status timeout (%s)" % sc(r).get("status"))
check(marker_pids(MARK + "-slow") == [], "the timed-out process is gone")

# Streaming output as progress notifications.
c.notifications.clear()
r = c.call("code_execute", {"sandbox_id": sb, "language": "python",
                            "code": "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.3)\n"},
           progress="p1")
prog = [n for n in c.notifications if n["method"] == "notifications/progress"]
check(len(prog) >= 2 and "tick 0" in json.dumps(prog), "output streamed as progress (%d notifications)" % len(prog))

# Cancellation kills the exec.
rid = c.start("tools/call", {"name": "code_execute", "arguments": {"sandbox_id": sb, "language": "shell",
                                                                    "code": "exec -a %s-cancel sleep 60" % MARK}})
end = time.time() + 20
while not marker_pids(MARK + "-cancel") and time.time() < end:
    try:
        c.wait("never", timeout=0.1)
    except TimeoutError:
        pass
check(marker_pids(MARK + "-cancel") != [], "the long exec runs")
c.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
end = time.time() + 10
while marker_pids(MARK + "-cancel") and time.time() < end:
    time.sleep(0.1)
check(marker_pids(MARK + "-cancel") == [], "cancelled: the process is gone")

# Bad requests: the server keeps serving.
r = c.call("code_read_file", {"sandbox_id": "sb-nope", "path": "x"})
check(r["result"].get("isError") is True and "sb-nope" in text(r), "unknown sandbox id: a clear error")
c.send_raw(b"{not json")
r = c.request("ping")
check("result" in r, "garbage then ping: still serving")
r = c.call("code_destroy_sandbox", {"sandbox_id": sb2})
check(not r["result"].get("isError"), "destroy sandbox 2")
r = c.call("code_execute", {"sandbox_id": sb2, "language": "shell", "code": "true"})
check(r["result"].get("isError") is True, "a destroyed sandbox is gone")

# SIGTERM: every sandbox destroyed, exit 0, nothing left.
c.call("code_execute", {"sandbox_id": sb, "language": "shell", "code": "true"})
c.p.send_signal(signal.SIGTERM)
rc = c.p.wait(30)
check(rc == 0, "SIGTERM: exit 0 (%s)" % rc)
time.sleep(0.2)
check(marker_pids(MARK) == [], "SIGTERM: no process left")

# The audit log: one record per tools/call.
recs = [json.loads(l) for l in open(audit) if l.strip()]
tools_seen = {r.get("tool") for r in recs}
check(len(recs) >= 20 and {"code_execute", "code_create_sandbox", "code_read_file", "code_write_file",
                           "code_destroy_sandbox"} <= tools_seen, "audit: %d records, tools %s" % (len(recs), sorted(tools_seen)))
writes = [r for r in recs if r.get("tool") == "code_write_file" and "content" in r.get("params", {})]
check(writes and all(isinstance(r["params"]["content"], dict) and len(r["params"]["content"].get("sha256", "")) == 64
                     for r in writes), "audit: file content kept as a digest and an excerpt")
# Who decided, over which transport, for which client (the parent's pid; no terminal here).
execs = [r for r in recs if r.get("tool") == "code_execute"]
check(execs and all(r["client"]["transport"] == "stdio" and r["client"]["peer"].startswith("pid %d " % os.getpid())
                    for r in execs), "audit: transport stdio, peer our pid (%s)" % (execs[:1] and execs[0]["client"]))
by = {(r["approval"]["decision"], r["approval"]["by"]) for r in execs}
check(("approved", "elicitation") in by and ("denied", "elicitation") in by, "audit: execs decided by elicitation (%s)" % by)
check(all(r["approval"]["by"] == "rule" for r in recs if r.get("tool") == "code_create_sandbox"),
      "audit: code_create_sandbox needs no approval: by rule")
sys.exit(1 if failures else 0)
