"""client.py — a small MCP client over stdio for airlock's tests: newline-delimited JSON-RPC,
elicitation answered by a policy the test sets (approve, decline, or stay silent); a principal's
client of airlock serve over HTTP (Http); and the checks a scenario records (check, finish)."""
import json
import os
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request

LATEST = "2025-11-25"
PREVIOUS = "2025-06-18"


class Client:
    def __init__(self, argv, elicit=True, env=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env)
        self.buf = b""
        self.next_id = 0
        self.elicit = elicit
        self.answer = "approve"  # approve | decline | silent
        self.elicitations = []
        self.notifications = []
        self.pending = {}
        pids = os.environ.get("AL_MCP_PIDS")  # the harness checks what each server left behind
        if pids:
            with open(pids, "a") as f:
                f.write("%d\n" % self.p.pid)

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def send_raw(self, line):
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("no message from the server")
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError("the server closed its output")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)  # stdout must carry protocol messages only

    def _handle(self, msg):
        """Server requests and notifications; returns msg if it is a response."""
        if "method" in msg and "id" in msg:
            if msg["method"] == "elicitation/create":
                self.elicitations.append(msg)
                if self.answer == "approve":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept", "content": {"approve": True}}})
                elif self.answer == "decline":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "decline"}})
            else:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
            return None
        if "method" in msg:
            self.notifications.append(msg)
            return None
        return msg

    def request(self, method, params=None, timeout=60, id_=None):
        rid = self.start(method, params, id_)
        return self.wait(rid, timeout)

    def start(self, method, params=None, id_=None):
        self.next_id += 1
        rid = id_ if id_ is not None else self.next_id
        m = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return rid

    def wait(self, rid, timeout=60):
        end = time.time() + timeout
        while rid not in self.pending:
            msg = self._handle(self._read(max(0.01, end - time.time())))
            if msg is not None:
                self.pending[msg.get("id")] = msg
        return self.pending.pop(rid)

    def notify(self, method, params=None):
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def initialize(self, version=LATEST):
        caps = {"elicitation": {"form": {}}} if self.elicit else {}
        r = self.request("initialize", {"protocolVersion": version, "capabilities": caps,
                                        "clientInfo": {"name": "airlock-test", "version": "1"}})
        self.notify("notifications/initialized")
        return r

    def call(self, tool, args, timeout=60, progress=None):
        params = {"name": tool, "arguments": args}
        if progress is not None:
            params["_meta"] = {"progressToken": progress}
        return self.request("tools/call", params, timeout)

    def close(self, timeout=30):
        self.p.stdin.close()
        return self.p.wait(timeout)


class ServeProcess:
    """airlock serve on a free loopback port: cmd is the airlock command, args serve's own (tokens,
    config, audit); its stderr goes to WORK/serve.err, its pid to $AL_MCP_PIDS (the harness checks
    what it left behind)."""

    def __init__(self, cmd, work, args):
        port_file = os.path.join(work, "serve.port")
        self.err = open(os.path.join(work, "serve.err"), "w")
        self.p = subprocess.Popen(cmd + ["serve", "--http", "127.0.0.1:0", "--socket", "none", "--port-file", port_file]
                                  + args, stderr=self.err)
        pids = os.environ.get("AL_MCP_PIDS")
        if pids:
            with open(pids, "a") as f:
                f.write("%d\n" % self.p.pid)
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        self.base = "http://127.0.0.1:%s" % open(port_file).read().strip()

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(60)
        self.err.close()
        return rc


class Http:
    """One principal (its bearer token) talking to airlock serve over TCP: the JSON API (request)
    and MCP over streamable HTTP (mcp: one JSON-RPC message; the response to it, from a JSON body
    or the SSE stream)."""

    def __init__(self, base, token):
        self.base = base
        self.auth = {"Authorization": "Bearer " + token}
        self.sid = None  # the MCP session, once initialize gave one

    def request(self, method, path, body=None, headers=None, timeout=60):
        h = {"Content-Type": "application/json", **self.auth}
        h.update(headers or {})
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data, h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def initialize(self, name):
        """Opens an MCP session (no elicitation declared)."""
        r = self.mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}})
        self.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def mcp(self, msg):
        h = {"Accept": "application/json, text/event-stream"}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        _, headers, body = self.request("POST", "/mcp", msg, h)
        self.sid = headers.get("Mcp-Session-Id") or self.sid
        if headers.get("Content-Type", "").startswith("text/event-stream"):
            msgs = [json.loads(l[5:]) for l in body.splitlines() if l.startswith("data:")]
            mine = [m for m in msgs if m.get("id") == msg.get("id")]
            return mine[-1] if mine else None
        return json.loads(body) if body else None


# ---- a scenario's checks ------------------------------------------------------------------------

def scenario_args():
    """A scenario's command line, ARGS... -- AIRLOCK_COMMAND...: (ARGS, the airlock command)."""
    cut = sys.argv.index("--")
    return sys.argv[1:cut], sys.argv[cut + 1:]


def write_config(confdir, name, text):
    """An airlock configuration file in confdir (writable by root only, as root airlock requires),
    readable by every mode's user; its path."""
    path = os.path.join(confdir, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


failures = []


def check(cond, what):
    """Records one check (printed either way); finish() fails the scenario if any failed."""
    print(("ok: " if cond else "FAIL: ") + what, file=sys.stderr)
    if not cond:
        failures.append(what)


def finish():
    if failures:
        print("%d check(s) failed:\n%s" % (len(failures), "\n".join(failures)), file=sys.stderr)
    sys.exit(1 if failures else 0)


def structured(r):
    """A tools/call response's structuredContent ({} when there is none)."""
    return (r or {}).get("result", {}).get("structuredContent") or {}


def succeeded(r):
    """A tools/call response that is a result without isError."""
    return r is not None and "result" in r and not r["result"].get("isError")
