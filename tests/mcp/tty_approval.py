"""tty_approval.py — the terminal prompt of an interactive `airlock mcp`: approvals asked on the
controlling terminal (a real pseudo-terminal) while stdin/stdout carry the protocol as pipes.
Judged from outside: an approved call's file exists, a denied or timed-out call's file never
appears, the prompt showed the tool, the risk and the code, and the audit log says who decided.
Usage: tty_approval.py WORKDIR CONFIGDIR -- AIRLOCK_COMMAND...
(CONFIGDIR: writable by root only, as a root airlock requires of a configuration's directory.)"""
import fcntl
import json
import os
import pty
import select
import subprocess
import sys
import termios
import time

work, confdir = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
failures = []
TIMEOUT_S = 4

# Short approval timeouts; code_execute needs approval, everything else does not.
config = os.path.join(confdir, "tty-config.yaml")
with open(config, "w") as f:
    f.write("""version: 1
rules:
- name: marked
  tools: [code_execute]
  risk: HIGH
  approval_timeout: %ds
  when: [{param: code, matches: "tty-approve-m[a-z]+"}]
- name: run-code
  tools: [code_execute]
  risk: HIGH
  approval_timeout: %ds
- name: the-rest
  tools: ["*"]
  risk: LOW
  require_approval: false
""" % (TIMEOUT_S, TIMEOUT_S))
os.chmod(config, 0o644)


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, file=sys.stderr)
    if not cond:
        failures.append(what)


class Server:
    """airlock mcp on pipes, with the pty's slave as its controlling terminal (or none)."""

    def __init__(self, argv, tty=True):
        self.master = None
        pre = None
        if tty:
            self.master, slave = pty.openpty()
            # Non-blocking: until the server opens /dev/tty nobody holds the slave, and the master
            # polls as hung up (read: EIO); a blocking read that follows a poll from that moment
            # would wait forever once the server has opened its terminal and writes nothing.
            os.set_blocking(self.master, False)

            def pre():
                # start_new_session made us a session leader without a terminal: take this one.
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                                  start_new_session=True, preexec_fn=pre)
        if tty:
            os.close(slave)
        self.buf, self.screen, self.next_id = b"", b"", 0
        pids = os.environ.get("AL_MCP_PIDS")
        if pids:
            with open(pids, "a") as f:
                f.write("%d\n" % self.p.pid)

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def pump(self, timeout):
        """Reads what the server wrote to stdout and to the terminal, for up to timeout s."""
        fds = [self.p.stdout] + ([self.master] if self.master is not None else [])
        r, _, _ = select.select(fds, [], [], timeout)
        for fd in r:
            if fd is self.master:
                try:
                    self.screen += os.read(self.master, 65536)
                except BlockingIOError:
                    pass
                except OSError:
                    time.sleep(0.01)  # EIO: the slave is not open (yet): poll says so at once
            else:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError("the server closed its output")
                self.buf += chunk

    def start(self, method, params=None):
        self.next_id += 1
        m = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return self.next_id

    def wait(self, rid, timeout=60):
        end = time.time() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                msg = json.loads(line)  # stdout carries protocol messages only
                if "method" in msg and "id" in msg:
                    check(msg["method"] != "elicitation/create", "no elicitation to a client without it")
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
                elif "method" not in msg and msg.get("id") == rid:
                    return msg
            if time.time() > end:
                raise TimeoutError("no answer to request %d" % rid)
            self.pump(0.1)

    def request(self, method, params=None, timeout=60):
        return self.wait(self.start(method, params), timeout)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "tty-test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def call(self, tool, args, timeout=60):
        return self.request("tools/call", {"name": tool, "arguments": args}, timeout)

    def wait_screen(self, text, timeout=20):
        end = time.time() + timeout
        while text.encode() not in self.screen and time.time() < end:
            self.pump(0.1)
        return text.encode() in self.screen

    def type(self, keys):
        os.write(self.master, keys.encode())

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(30)
        if self.master is not None:
            os.close(self.master)
        return rc


def sc(r):
    return r["result"].get("structuredContent", {})


def files(s, sb):
    return json.dumps(s.call("code_list_files", {"sandbox_id": sb})["result"])


audit = os.path.join(work, "tty-audit.jsonl")
base = cmd + ["mcp", "--config", config, "--audit", audit]

# The default channels: the client cannot elicit, so the terminal asks.
s = Server(base)
s.initialize()
sb = sc(s.call("code_create_sandbox", {"language": "shell"})).get("sandbox_id")
check(bool(sb), "a sandbox (no approval needed)")

rid = s.start("tools/call", {"name": "code_execute", "arguments": {
    "sandbox_id": sb, "language": "shell", "code": "echo yes > approved.txt # tty-approve-marker"}})
check(s.wait_screen("Run it? [y/N]"), "the prompt appears on the terminal")
screen = s.screen.decode(errors="replace")
check("code_execute" in screen and "HIGH" in screen and sb in screen and "tty-approve-marker" in screen,
      "the prompt shows the tool, the risk, the sandbox and the code (%r)" % screen[-600:])
check("matched:   line 1, column 27: >>>tty-approve-marker<<<" in screen and
      "echo yes > approved.txt # >>>tty-approve-marker<<<" in screen,
      "the prompt marks what the rule's pattern matched, as the elicitation does (%r)" % screen[-600:])
s.screen = b""
s.type("y\n")
r = s.wait(rid)
check(not r["result"].get("isError"), "approved on the terminal: the call ran (%s)" % json.dumps(r)[:300])
check("approved.txt" in files(s, sb), "approved: the file exists")

# Type-ahead before the prompt is discarded (or read while nothing waits); "n" denies.
s.type("y\n")
time.sleep(0.2)
rid = s.start("tools/call", {"name": "code_execute", "arguments": {
    "sandbox_id": sb, "language": "shell", "code": "echo no > denied.txt"}})
check(s.wait_screen("Run it? [y/N]"), "the second prompt appears")
s.screen = b""
s.type("n\n")
r = s.wait(rid)
check(r["result"].get("isError") is True and "denied" in json.dumps(r), "denied on the terminal: a tool error")
check("denied.txt" not in files(s, sb), "denied: the code never ran")

# Silence: the rule's timeout denies.
t0 = time.time()
rid = s.start("tools/call", {"name": "code_execute", "arguments": {
    "sandbox_id": sb, "language": "shell", "code": "echo late > timedout.txt"}})
check(s.wait_screen("Run it? [y/N]"), "the third prompt appears")
r = s.wait(rid, timeout=TIMEOUT_S + 20)
check(r["result"].get("isError") is True and "timeout" in json.dumps(r), "silence: denied at the timeout")
check(time.time() - t0 >= TIMEOUT_S - 0.5, "not before the timeout (%.1f s)" % (time.time() - t0))
check(s.wait_screen("no longer waiting"), "the terminal says the request is gone")
s.type("y\n")  # too late: nothing is waiting
time.sleep(0.5)
check("timedout.txt" not in files(s, sb), "timed out: the code never ran, even after a late 'y'")
check(s.close() == 0, "end of input: exit 0")

# The other modes: throwaway sandboxes only (the side-effect proofs are above; a denied call's
# result and the audit log say it never ran, an approved one's output that it did).
# --approve deny: nobody is asked, nothing needing approval runs.
s = Server(base + ["--approve", "deny"])
s.initialize()
r = s.call("code_execute", {"language": "shell", "code": "echo ran-deny"})
check(r["result"].get("isError") is True and "ran-deny" not in json.dumps(sc(r)) and b"Run it?" not in s.screen,
      "--approve deny: denied, no prompt")
s.close()

# --approve auto=HIGH: nobody is asked, HIGH runs.
s = Server(base + ["--approve", "auto=HIGH"])
s.initialize()
r = s.call("code_execute", {"language": "shell", "code": "echo ran-auto"})
check(not r["result"].get("isError") and sc(r).get("stdout") == "ran-auto\n", "--approve auto=HIGH: HIGH runs unasked")
s.close()

# No controlling terminal: --approve terminal is refused at start; the default denies.
p = subprocess.run(base + ["--approve", "terminal"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, start_new_session=True, timeout=30)
check(p.returncode == 125 and b"terminal" in p.stderr, "no terminal: --approve terminal refused (%d %r)"
      % (p.returncode, p.stderr[-200:]))
s = Server(base, tty=False)
s.initialize()
r = s.call("code_execute", {"language": "shell", "code": "echo ran-nobody"})
check(r["result"].get("isError") is True and "nobody can be asked" in json.dumps(r),
      "no terminal, no elicitation: denied with a clear error (%s)" % json.dumps(r)[:300])
s.close()

# The audit log: who decided, over which transport, for which client.
recs = [json.loads(line) for line in open(audit) if line.strip()]
execs = [r for r in recs if r["tool"] == "code_execute" and r.get("event") != "start"]
by = [(r["approval"]["decision"], r["approval"]["by"]) for r in execs]
check(by == [("approved", "terminal"), ("denied", "terminal"), ("denied", "timeout"), ("denied", "auto"),
             ("approved", "auto"), ("denied", "unavailable")], "audit: who decided each exec (%s)" % by)
peers = [r["client"] for r in execs]
check(all(c["transport"] == "stdio" and c["peer"].startswith("pid ") for c in peers),
      "audit: transport stdio, the parent's pid (%s)" % peers[:1])
check("tty /dev/pts/" in peers[0]["peer"] and "tty" not in peers[-1]["peer"],
      "audit: the controlling terminal named when there is one (%s / %s)" % (peers[0]["peer"], peers[-1]["peer"]))
creates = [r for r in recs if r["tool"] == "code_create_sandbox"]
check(creates and all(r["approval"]["by"] == "rule" for r in creates), "audit: no approval needed: by rule")
g = subprocess.run(cmd + ["audit", "grep", "approval.by=terminal", "client.transport=stdio", audit],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
# The approved exec's start and end records, and the declined one's single record.
check(g.returncode == 0 and len(g.stdout.splitlines()) == 3, "airlock audit grep approval.by=terminal: 3 records")
sys.exit(1 if failures else 0)
