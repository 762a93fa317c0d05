"""one_path.py — one call runner for every transport, seen from outside: the same four calls over MCP
on stdio, MCP over HTTP and the JSON API meet the same risk rule and the same approval, and leave one
audit record each, with the same fields (only the transport, the peer, the sandbox and the human's
channel differ).

Usage: one_path.py WORKDIR CONFIGDIR MARKER -- AIRLOCK_COMMAND...
(CONFIGDIR: writable by root only, as a root airlock requires of a configuration's directory.)"""
import json
import os
import sys
import threading
import time

from client import Client, Http, ServeProcess, check, finish, scenario_args, write_config

(work, confdir, mark), cmd = scenario_args()

config = write_config(confdir, "one-path.yaml", """version: 1
rules:
- name: one-path-forbidden
  tools: [code_execute]
  when:
  - param: code
    matches: forbidden
  risk: CRITICAL
- name: one-path-asked
  tools: [code_execute]
  when:
  - param: code
    matches: asked
  risk: HIGH
  approval_timeout: 60s
- name: the-rest
  tools: ["*"]
  risk: LOW
  require_approval: false
approval:
  deny_above: HIGH
  channels: [elicitation, http]
""")

# The calls, by name: the code each runs (the marker and the name make each record findable).
CODE = {name: "echo %s-%s" % (mark, name) for name in ("allowed", "forbidden", "asked", "invalid")}
OUT = {name: "%s-%s" % (mark, name) for name in CODE}


def exec_args(sb, name):
    return {"sandbox_id": sb, "language": "cobol" if name == "invalid" else "shell", "code": CODE[name]}


# ---- MCP on stdio: the client's user approves through elicitation ------------------------------------

def over_stdio(audit):
    c = Client(cmd + ["mcp", "--config", config, "--audit", audit], elicit=True)
    got = {}
    try:
        c.initialize()
        sb = c.call("code_create_sandbox", {"language": "shell"})["result"]["structuredContent"]["sandbox_id"]
        for name in CODE:
            r = c.call("code_execute", exec_args(sb, name))
            got[name] = (r.get("result", {}).get("isError") is True, json.dumps(r))
        c.call("code_destroy_sandbox", {"sandbox_id": sb})
        msg = c.elicitations[0]["params"]["message"] if c.elicitations else ""
        check(len(c.elicitations) == 1 and ("echo %s->>>asked<<<" % mark) in msg,
              "stdio: one elicitation, for the asked call, its code in full with the match marked")
        check( "line 1, column %d: >>>asked<<<" % (len("echo %s-" % mark) + 1) in msg,
              "stdio: the elicitation marks what the rule's pattern matched")
    finally:
        check(c.close() == 0, "stdio: airlock mcp exits 0 at end of input")
    return got


# ---- airlock serve: MCP over HTTP (no elicitation: the approvals queue) and the JSON API ---------------

class Serve:
    def __init__(self, audit):
        token_file = os.path.join(work, "serve.token")  # TCP needs tokens: the server generates the client's
        self.srv = ServeProcess(cmd, work, ["--config", config, "--audit", audit, "--token-file", token_file,
                                            "--approver-token-file", os.environ["AL_REVIEWER_FILE"]])
        self.http = Http(self.srv.base, open(token_file).read().split()[-1])
        self.request, self.mcp, self.stop = self.http.request, self.http.mcp, self.srv.stop
        self.reviewer = {"Authorization": "Bearer " + os.environ["AL_REVIEWER_TOKEN"]}

    def approve_next(self):
        """Approves the first call waiting in /v1/approvals (waits for one); its id, or None."""
        for _ in range(200):
            _, _, body = self.request("GET", "/v1/approvals", headers=self.reviewer)
            pending = json.loads(body)["approvals"]
            if pending:
                check([m["text"] for m in pending[0].get("marks", [])] == ["asked"] and
                      ">>>asked<<<" in pending[0].get("code_marked", ""),
                      "the approvals queue marks what the rule's pattern matched")
                self.request("POST", "/v1/approvals/%d" % pending[0]["id"],
                             {"approve": True, "digest": pending[0]["digest"]}, self.reviewer)
                return pending[0]
            time.sleep(0.05)
        return None

def in_thread(fn):
    out = {}
    t = threading.Thread(target=lambda: out.update(r=fn()))
    t.start()
    return t, out


def over_mcp_http(s):
    got = {}
    s.http.initialize("one-path")
    ids = iter(range(2, 100))

    def call(tool, args):
        return s.mcp({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                      "params": {"name": tool, "arguments": args}})

    sb = call("code_create_sandbox", {"language": "shell"})["result"]["structuredContent"]["sandbox_id"]
    for name in CODE:
        t, out = in_thread(lambda n=name: call("code_execute", exec_args(sb, n)))
        if name == "asked":
            item = s.approve_next()
            check(item is not None and OUT["asked"] in json.dumps(item), "MCP over HTTP: the asked call waits in /v1/approvals")
        t.join(90)
        r = out.get("r") or {}
        got[name] = (r.get("result", {}).get("isError") is True, json.dumps(r))
    call("code_destroy_sandbox", {"sandbox_id": sb})
    return got


def over_json_api(s):
    got = {}
    _, _, body = s.request("POST", "/v1/sandboxes", {"language": "shell"})
    sb = json.loads(body)["sandbox_id"]
    for name in CODE:
        args = exec_args(sb, name)
        del args["sandbox_id"]
        t, out = in_thread(lambda a=args: s.request("POST", "/v1/sandboxes/%s/exec" % sb, a))
        if name == "asked":
            item = s.approve_next()
            check(item is not None and OUT["asked"] in json.dumps(item), "JSON API: the asked call waits in /v1/approvals")
        t.join(90)
        status, _, body = out.get("r") or (0, None, "")
        last = body.strip().splitlines()[-1] if body.strip() else "{}"
        failed = status >= 300 or "error" in json.loads(last)
        got[name] = (failed, "%d %s" % (status, body))
    s.request("DELETE", "/v1/sandboxes/%s" % sb)
    return got


# ---- the calls' answers ------------------------------------------------------------------------------------

audits = {t: os.path.join(work, "%s.jsonl" % t) for t in ("stdio", "serve")}
answers = {"stdio": over_stdio(audits["stdio"])}
serve = Serve(audits["serve"])
try:
    answers["mcp-http"] = over_mcp_http(serve)
    answers["json-api"] = over_json_api(serve)
finally:
    check(serve.stop() == 0, "airlock serve exits 0 on SIGTERM")

for t, got in answers.items():
    check(not got["allowed"][0] and OUT["allowed"] in got["allowed"][1], "%s: the allowed call ran" % t)
    check(not got["asked"][0] and OUT["asked"] in got["asked"][1].replace(CODE["asked"], ""),
          "%s: the approved call ran" % t)
    check(got["forbidden"][0] and "denied" in got["forbidden"][1] and "CRITICAL" in got["forbidden"][1],
          "%s: the forbidden call is denied, naming the risk: %s" % (t, got["forbidden"][1][:300]))
    check(got["invalid"][0] and "invalid" in got["invalid"][1] and "language" in got["invalid"][1],
          "%s: the invalid call is refused, naming the field: %s" % (t, got["invalid"][1][:300]))

# ---- the audit records ---------------------------------------------------------------------------------------

STARTS = set()


def records(path, transport_of):
    """{(transport, call name): [final records]} for the calls of this test; the call ids of their
    start records (a call that ran has one, written before it ran) go to STARTS."""
    out = {}
    for line in open(path):
        rec = json.loads(line)
        if rec.get("event") == "start":
            STARTS.add(rec.get("call_id"))
            continue
        if rec.get("event") not in ("end", "call"):
            continue
        code = rec.get("params", {}).get("code") or {}
        for name in CODE:
            if OUT[name] in json.dumps(code):
                out.setdefault((transport_of(rec), name), []).append(rec)
    return out


recs = records(audits["stdio"], lambda r: "stdio")
# On one server, the JSON API's calls are the ones made without an MCP session: the JSON API's
# record has the same transport ("http"); the session tells them apart by order (MCP first).
serve_recs = records(audits["serve"], lambda r: "http")
for name in CODE:
    both = serve_recs.get(("http", name), [])
    check(len(both) == 2, "airlock serve: one record for %s over each HTTP transport (%d)" % (name, len(both)))
    recs[("mcp-http", name)] = both[:1]
    recs[("json-api", name)] = both[1:2]


def fields(rec):
    """What must be the same whatever the transport."""
    params = dict(rec["params"])
    params.pop("sandbox_id", None)
    res = rec.get("resources") or {}
    return {"tool": rec["tool"], "params": params, "risk": rec["risk"], "decision": rec["approval"]["decision"],
            "status": rec["result"]["status"], "exit_code": res.get("exit_code")}


by = {"stdio": "elicitation", "mcp-http": "http", "json-api": "http"}
for name in CODE:
    per = {}
    for t in ("stdio", "mcp-http", "json-api"):
        rs = recs.get((t, name), [])
        check(len(rs) == 1, "%s: exactly one audit record for the %s call (%d)" % (t, name, len(rs)))
        if rs:
            per[t] = fields(rs[0])
            ran = rs[0]["approval"]["decision"] == "approved"
            check(not ran or rs[0].get("call_id") in STARTS,
                  "%s: the %s call ran after its start record (%s)" % (t, name, rs[0].get("call_id")))
            expect_by = {"allowed": "rule", "forbidden": "auto", "asked": by[t]}.get(name)
            if expect_by:
                check(rs[0]["approval"]["by"] == expect_by,
                      "%s: the %s call was decided by %s (%s)" % (t, name, expect_by, rs[0]["approval"]["by"]))
            check(rs[0]["client"]["transport"] == ("stdio" if t == "stdio" else "http"), "%s: the record's transport" % t)
    if len(per) == 3:
        same = per["stdio"] == per["mcp-http"] == per["json-api"]
        check(same, "the %s call: the same record fields over every transport: %s" % (name, json.dumps(per)))
expect = {"allowed": ("LOW", "the-rest", "approved", "ok"), "forbidden": ("CRITICAL", "one-path-forbidden", "denied", "denied"),
          "asked": ("HIGH", "one-path-asked", "approved", "ok"), "invalid": (None, None, None, "invalid")}
for name, (level, rule, decision, status) in expect.items():
    rs = recs.get(("stdio", name))
    if not rs:
        continue
    f = fields(rs[0])
    check(f["status"] == status, "the %s call's status is %s (%s)" % (name, status, f["status"]))
    if level:
        check(f["risk"]["level"] == level and f["risk"]["rule"] == rule and f["decision"] == decision,
              "the %s call: risk %s by rule %s, %s (%s)" % (name, level, rule, decision, json.dumps(f)))

finish()
