"""client.py — a small MCP client over stdio for airlock's tests: newline-delimited JSON-RPC,
elicitation answered by a policy the test sets (approve, decline, or stay silent)."""
import json
import os
import select
import subprocess
import time

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
